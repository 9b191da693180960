// Dependencies between jobs (see rules/dependencies.hpp). Why it holds under concurrency:
// - An enqueue locks the jobs it waits for FOR KEY SHARE before it reads which are left, and
//   keeps the locks to its commit: a job cannot leave the queue in between (its DELETE waits),
//   so a dependency is either seen gone, or its departure comes after the edges committed and
//   its trigger reads them with a snapshot taken after it waited. (KEY SHARE, not an update:
//   the dependants of one job are enqueued side by side, and an update of a job would wait for
//   whoever counts it down.)
// - A departure's edges are final once it is recorded, and only the holder of its row in
//   ck.dependency_departures (FOR UPDATE SKIP LOCKED) takes them: each edge is counted once.
// - Dependants are counted down in id order, so two releases never deadlock.
#include "queue/rules/dependencies.hpp"
#include "base/args.hpp"
#include "queue/store/statements.hpp"
#include "queue/signal/activity.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/store/place.hpp"
#include "queue/store/rights.hpp"
#include "queue/rules/limits.hpp"
#include "queue/signal/wakeup.hpp"
#include "base/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

#include <algorithm>

namespace ck {

namespace {

const char *dead_reason = nullptr;   // set by DeadDepartures
int resolving = 0;                   // resolve_batch_of is running (a trigger under it only records)
bool deferred = false;               // a departure was recorded under a DeferredDepartures

Datum id_array(const int64 *ids, int n)
{
    return pg_call([&] {
        Datum *elems = static_cast<Datum *>(palloc(sizeof(Datum) * (n + 1)));
        for (int i = 0; i < n; i++)
            elems[i] = Int64GetDatum(ids[i]);
        return PointerGetDatum(construct_array(elems, n, INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE));
    });
}

// The reason a dependant of `job` is buried with, at most ~1 kB (a chain of burials nests them).
const char *dependant_reason(int64 job, const char *failure)
{
    std::string reason = fmt("dependency %lld did not complete: %s", static_cast<long long>(job),
                             failure != nullptr ? failure : "failed");
    if (reason.size() > 1000)
        reason = reason.substr(0, 997) + "...";
    return pg_call([&] { return pstrdup(reason.c_str()); });
}

void bury(Oid queue, const int64 *ids, int n, const char *reason)
{
    Datum values[2] = {id_array(ids, n), pg_call([&] { return PointerGetDatum(cstring_to_text(reason)); })};
    DeadDepartures dead(reason);
    const QueuePlan &p = queue_statement(QueueStatement::DepBury, queue);
    queue_execute(p, queue, values, nullptr, Snap::Fresh);
    bool isnull;
    count_at_commit(queue, Activity::Buried, static_cast<uint64>(DatumGetInt64(result_datum(0, 1, &isnull))));
}

// The dependants (sorted) of a completed job, counted down.
void release(Oid queue, const int64 *ids, int n)
{
    TimestampTz now = GetCurrentTimestamp();
    Datum values[2] = {id_array(ids, n), TimestampTzGetDatum(now)};
    // A snapshot taken now: a departure's trigger runs with its statement's, taken before it
    // waited for the enqueue of the dependants it is to count down.
    const QueuePlan &p = queue_statement(QueueStatement::DepRelease, queue);
    uint64 rows = queue_execute(p, queue, values, nullptr, Snap::Fresh);
    // Those at zero with a concurrency key go to the key's limit after the rows are read.
    int keyed = 0;
    int64 *keyed_id = static_cast<int64 *>(pg_call([&] { return palloc(sizeof(int64) * (rows + 1)); }));
    Datum *keyed_key = static_cast<Datum *>(pg_call([&] { return palloc(sizeof(Datum) * (rows + 1)); }));
    for (uint64 r = 0; r < rows; r++) {
        bool isnull;
        if (!DatumGetBool(result_datum(r, 4, &isnull)))
            continue;   // still waiting for others
        if (!DatumGetBool(result_datum(r, 5, &isnull))) {
            made_ready(queue, r);
            continue;
        }
        keyed_id[keyed] = DatumGetInt64(result_datum(r, 3, &isnull));
        keyed_key[keyed] = pg_call([&] { return PointerGetDatum(PG_DETOAST_DATUM_COPY(result_datum(r, 6, &isnull))); });
        keyed++;
    }
    for (int i = 0; i < keyed; i++) {
        Placing place = place_job(queue, keyed_key[i], false, TimestampTzGetDatum(now));
        if (place.parked_null == ' ')
            continue;   // the key is full: parked, its turn comes with a departure of the key
        unpark_job(queue, keyed_id[i], TimestampTzGetDatum(now), Snap::Fresh);
    }
}

// Resolves departures of the queue, up to resolve_batch edges in all.
int resolve_batch_of(Oid queue)
{
    struct Resolving {
        Resolving() { resolving++; }
        ~Resolving() { resolving--; }
    } in_progress;
    Datum q[1] = {ObjectIdGetDatum(queue)};
    int budget = resolve_batch, resolved = 0;
    while (budget > 0) {
        // A snapshot taken now: departures and edges committed since the caller's began.
        if (queue_execute(queue_statement(QueueStatement::DepNext, queue), queue, q, nullptr, Snap::Fresh) == 0)
            break;
        bool isnull, completed;
        int64 job = DatumGetInt64(result_datum(0, 1, &isnull));
        Datum failure = result_datum(0, 2, &completed);
        const char *reason = completed ? nullptr : dependant_reason(job, pg_call([&] { return TextDatumGetCString(failure); }));
        Datum take[3] = {q[0], Int64GetDatum(job), Int32GetDatum(budget)};
        int n = static_cast<int>(queue_execute(queue_statement(QueueStatement::DepTake, queue), queue, take, nullptr, Snap::Fresh));
        int64 *ids = static_cast<int64 *>(pg_call([&] { return palloc(sizeof(int64) * (n + 1)); }));
        for (int i = 0; i < n; i++)
            ids[i] = DatumGetInt64(result_datum(i, 1, &isnull));
        std::sort(ids, ids + n);
        if (n < budget)
            queue_execute(queue_statement(QueueStatement::DepDone, queue), queue, take, nullptr);
        budget -= std::max(n, 1);
        resolved += n;
        if (n == 0)
            continue;
        if (completed)
            release(queue, ids, n);
        else
            bury(queue, ids, n, reason);
    }
    return resolved;
}

} // namespace

DeadDepartures::DeadDepartures(const char *reason) : outer_(dead_reason) { dead_reason = reason; }
DeadDepartures::~DeadDepartures() { dead_reason = outer_; }

Dependencies after_arg(FunctionCallInfo fcinfo, int argno)
{
    Dependencies deps;
    if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
        return deps;
    ArrayType *array = PG_GETARG_ARRAYTYPE_P(argno);
    pg_call([&] {
        Datum *elems;
        bool *nulls;
        int n;
        deconstruct_array(array, INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE, &elems, &nulls, &n);
        if (n > max_dependencies)
            ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                            errmsg("a job may wait for at most %d jobs, got %d", max_dependencies, n),
                            errhint("Make a job that waits for a part of them, and wait for that job.")));
        deps.id = static_cast<int64 *>(palloc(sizeof(int64) * (n + 1)));
        for (int i = 0; i < n; i++) {
            if (nulls[i])
                ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("after must not contain NULL")));
            int64 id = DatumGetInt64(elems[i]);
            if (id < 1)
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("after must hold job ids, got %lld", static_cast<long long>(id))));
            deps.id[i] = id;
        }
        std::sort(deps.id, deps.id + n);
        deps.n = static_cast<int>(std::unique(deps.id, deps.id + n) - deps.id);
    });
    return deps;
}

Waiting wait_for(Oid queue, const Dependencies &deps)
{
    Waiting w;
    Datum listed[1] = {id_array(deps.id, deps.n)};
    uint64 n = queue_execute(queue_statement(QueueStatement::DepLock, queue), queue, listed, nullptr);
    w.id = static_cast<int64 *>(pg_call([&] { return palloc(sizeof(int64) * (n + 1)); }));
    bool unmarked = false;
    pg_call([&] {
        for (uint64 r = 0; r < n; r++) {
            bool isnull, flag_null;
            w.id[w.n++] = DatumGetInt64(result_datum(r, 1, &isnull));
            (void) result_datum(r, 4, &flag_null);
            unmarked = unmarked || flag_null;
            // Claims skip a job while it is locked here: where the claim frontier must look
            // again once this transaction ends, whichever way.
            JobPlace at = job_place(r, 2, 1);
            frontier_at_end(queue, at.priority, at.place);
        }
    });
    if (unmarked) {
        Datum locked[1] = {id_array(w.id, w.n)};
        queue_execute(queue_statement(QueueStatement::DepMark, queue), queue, locked, nullptr);
    }
    if (static_cast<int>(n) < deps.n &&
        queue_execute(queue_statement(QueueStatement::DepDead, queue), queue, listed, nullptr, Snap::Fresh) == 1) {
        bool isnull, no_error;
        int64 job = DatumGetInt64(result_datum(0, 1, &isnull));
        Datum error = result_datum(0, 2, &no_error);
        w.failure = dependant_reason(job, no_error ? nullptr : pg_call([&] { return TextDatumGetCString(error); }));
    }
    return w;
}

void record_dependant(Oid queue, int64 id, const Waiting &w)
{
    if (w.failure != nullptr) {
        bury(queue, &id, 1, w.failure);
        return;
    }
    Datum edges[3] = {ObjectIdGetDatum(queue), id_array(w.id, w.n), Int64GetDatum(id)};
    queue_execute(queue_statement(QueueStatement::DepEdges, queue), queue, edges, nullptr);
}

bool resolve_after_claim(Oid queue, uint64 claimed)
{
    static uint32 claims = 0;
    if ((claimed > 0 && ++claims % 64 != 0) || IsolationUsesXactSnapshot())
        return false;
    // A queue without the columns of dependencies (made before 0.3.1, not updated) has none.
    if (!queue_statement(QueueStatement::Claim, queue).has_dependencies)
        return false;
    Datum q[1] = {ObjectIdGetDatum(queue)};
    const QueuePlan &p = queue_statement(QueueStatement::DepAny, queue);
    if (queue_execute(p, queue, q, nullptr, Snap::Fresh) == 0)
        return false;
    // Counting dependants down and burying them takes the rights of a claim and of a burial; a
    // worker without them leaves it to others.
    return may_claim(queue) && may_bury(queue, p.dead_letters) && resolve_batch_of(queue) > 0;
}

void resolve_deferred(Oid queue)
{
    if (!deferred)
        return;
    deferred = false;
    resolve_batch_of(queue);
}

void dependency_left(Oid queue, Datum id)
{
    Datum values[3] = {ObjectIdGetDatum(queue), id,
                       dead_reason == nullptr ? 0 : pg_call([] { return PointerGetDatum(cstring_to_text(dead_reason)); })};
    char nulls[3] = {' ', ' ', dead_reason == nullptr ? 'n' : ' '};
    queue_execute(queue_statement(QueueStatement::DepDeparted, queue), queue, values, nulls);
    if (departures_deferred())
        deferred = true;
    else if (resolving == 0)
        resolve_batch_of(queue);
}

} // namespace ck
