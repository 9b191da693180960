// Queues with leases: ck.enqueue, ck.claim, ck.claim_wait, ck.complete, ck.complete_many, ck.fail,
// ck.extend_lease, ck.retry_dead and ck.purge_dead. Every acknowledgement checks the lease
// token in its WHERE, so a worker whose lease expired and was re-claimed changes nothing.
#include "base/args.hpp"
#include "base/errcodes.hpp"
#include "queue/queue.hpp"
#include "queue/queue_activity.hpp"
#include "queue/queue_dependencies.hpp"
#include "queue/queue_distributed.hpp"
#include "queue/queue_frontier.hpp"
#include "queue/queue_key.hpp"
#include "queue/queue_limits.hpp"
#include "queue/queue_plan.hpp"
#include "queue/queue_wakeup.hpp"
#include "base/spi.hpp"

extern "C" {
#include "common/pg_prng.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <cmath>

namespace ck {

// Whether the caller may bury: move jobs out of the queue (SELECT, DELETE) into its dead
// letters (INSERT). A worker without those rights claims all the same and leaves the burial
// to one that has them.
bool may_bury(Oid queue, Oid dead_letters)
{
    return pg_call([&] {
        Oid user = GetUserId();
        // (pg_class_aclcheck is satisfied by any one bit of its mask: one call per right.)
        return pg_class_aclcheck(queue, user, ACL_SELECT) == ACLCHECK_OK &&
               pg_class_aclcheck(queue, user, ACL_DELETE) == ACLCHECK_OK &&
               pg_class_aclcheck(dead_letters, user, ACL_INSERT) == ACLCHECK_OK;
    });
}

bool may_claim(Oid queue)
{
    return pg_call([&] {
        Oid user = GetUserId();
        return pg_class_aclcheck(queue, user, ACL_SELECT) == ACLCHECK_OK &&
               pg_class_aclcheck(queue, user, ACL_UPDATE) == ACLCHECK_OK;
    });
}

} // namespace ck

namespace {

using ck::Activity;
using ck::FrontierKey;
using ck::JobKey;
using ck::job_key;
using ck::ready_again_on_abort;
using ck::check_key_columns;
using ck::FrontierView;
using ck::key_less;
using ck::finite_interval_arg;
using ck::interval_arg;
using ck::lease_arg;
using ck::Prepared;
using ck::require_arg;
using ck::StatementKind;

int32 batch_arg(FunctionCallInfo fcinfo, int argno)
{
    require_arg(fcinfo, argno, "batch");
    int32 batch = PG_GETARG_INT32(argno);
    if (batch < 1 || batch > ck::max_claim_batch)
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE,
                        ck::fmt("batch must be between 1 and %d, got %d", ck::max_claim_batch, batch));
    return batch;
}

// (queue, id, lease_token): the arguments every acknowledgement starts with.
struct Ack {
    Oid queue;
    Datum id;
    Datum token;
};

Ack ack_args(FunctionCallInfo fcinfo)
{
    require_arg(fcinfo, 0, "queue");
    require_arg(fcinfo, 1, "id");
    require_arg(fcinfo, 2, "lease_token");
    return {PG_GETARG_OID(0), PG_GETARG_DATUM(1), PG_GETARG_DATUM(2)};
}

int claims_since_burial = 0;

// The claim's plan is generic and kept; made while the queue was nearly empty, it finds the
// claimed rows by scanning the whole table, which a big queue cannot afford until
// autovacuum's next ANALYZE (a minute or more). A queue four times the size it was planned at is planned again: the
// planner then sees the real size, and the plans of other backends follow at commit.
void replan_if_grown(Oid queue, const Prepared &claim)
{
    BlockNumber now = ck::table_blocks(queue);
    if (now > 4 * claim.planned_blocks + 16)
        ck::pg_call([&] { CacheInvalidateRelcacheByRelid(queue); });
}

// Executes a statement that must walk the claim index in order (the claim, the burial) of
// queue, with the plan queue_plan.cpp makes. With a snapshot (the frontier's), it runs with
// that one instead of `snap`.
uint64 execute_in_index_order(Oid queue, const Prepared &p, Datum *values, ck::Snap snap, Snapshot snapshot = nullptr)
{
    ck::plan_queue_statement(p, queue);
    return snapshot != nullptr ? ck::execute_plan_in(p.plan, values, nullptr, snapshot)
                               : ck::execute_plan(p.plan, values, nullptr, snap);
}

// How far a ClaimFrom got in each priority of its view (by position in it): the last position
// any claimed row came from, and per position the greatest old key of the rows the scan found
// where its snapshot saw them (a row updated since by a transaction that committed later, its
// xmin not visible to the snapshot, comes back as that newer version, whose key may lie beyond
// where the scan stood, so it says nothing of how far the scan got).
struct Reached {
    int last_position = -1;
    FrontierKey last[ck::frontier_max_priorities];
};

// The claimed rows of the last execution (id, lease_token, attempt, payload, lease_until, old
// priority, old run_at, old xmin) go to the result; each is ready again at its old key if this
// transaction aborts, and at its lease end once it commits (if the lease has run out by
// then). Returns how far the scan got in each priority of view (ClaimFrom).
Reached take_claimed(Oid queue, ReturnSetInfo *out, const FrontierView &view, Snapshot snapshot)
{
    return ck::pg_call([&] {
        Reached reached;
        for (int i = 0; i < view.npriorities; i++)
            reached.last[i] = FrontierKey{DT_NOBEGIN, PG_INT64_MIN};
        check_key_columns(6, 1);   // also when nothing was claimed: the same error every time
        // The rows go out in claim order: priority, then the key they were claimed at.
        uint64 *order = static_cast<uint64 *>(palloc(sizeof(uint64) * (SPI_processed + 1)));
        JobKey *keys = static_cast<JobKey *>(palloc(sizeof(JobKey) * (SPI_processed + 1)));
        for (uint64 i = 0; i < SPI_processed; i++) {
            order[i] = i;
            keys[i] = job_key(i, 6, 1);
        }
        std::sort(order, order + SPI_processed, [&](uint64 a, uint64 b) {
            return keys[a].priority != keys[b].priority ? keys[a].priority < keys[b].priority
                                                        : key_less(keys[a].key, keys[b].key);
        });
        ck::append_result_rows(out, 5, order);
        pfree(order);
        for (uint64 i = 0; i < SPI_processed; i++) {
            JobKey was = keys[i];
            bool isnull;
            TransactionId xmin = DatumGetTransactionId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 8, &isnull));
            bool where_seen = snapshot == nullptr || !XidInMVCCSnapshot(xmin, snapshot);
            TimestampTz until = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 5, &isnull));
            ck::frontier_on_abort(queue, was.priority, was.key);
            ck::frontier_on_commit_lease(queue, was.priority, FrontierKey{until, was.key.id});
            if (view.mode == ck::ClaimMode::Check)
                ck::frontier_check_claimed(queue, was.priority, was.key);
            int at = 0;
            while (at < view.npriorities && view.priority[at] != was.priority)
                at++;
            if (at == view.npriorities)
                continue;   // not from a ClaimFrom
            reached.last_position = std::max(reached.last_position, at);
            if (where_seen && key_less(reached.last[at], was.key))
                reached.last[at] = was.key;
        }
        pfree(keys);
        SPI_freetuptable(SPI_tuptable);   // copied: a claim_wait looks many times in one call
        return reached;
    });
}

// The queue's priorities, for a frontier not known yet; false: claim the full way.
bool discover(Oid queue, FrontierView *view, TimestampTz moment)
{
    const Prepared &p = ck::queue_statement(StatementKind::Priorities, queue);
    uint64 n = ck::execute_plan(p.plan, nullptr, nullptr, ck::Snap::Fresh);
    if (ck::pg_call([] { return SPI_gettypeid(SPI_tuptable->tupdesc, 1) != INT4OID; }))
        return false;   // priority altered to another type: the full claim says so
    int32 found[ck::frontier_max_priorities + 1];
    for (uint64 i = 0; i < n; i++) {
        bool isnull;
        found[i] = DatumGetInt32(ck::result_datum(i, 1, &isnull));
    }
    return ck::pg_call([&] {
        SPI_freetuptable(SPI_tuptable);
        return ck::frontier_discovered(queue, view, static_cast<int>(n), found, moment);
    });
}

// n priorities as an int4[] (the statements' priority lists).
Datum priority_array(const int32 *priorities, int n)
{
    return ck::pg_call([&] {
        Datum elems[ck::frontier_max_priorities];
        for (int i = 0; i < n; i++)
            elems[i] = Int32GetDatum(priorities[i]);
        return PointerGetDatum(construct_array(elems, n, INT4OID, sizeof(int32), true, TYPALIGN_INT));
    });
}

// The view's priorities and their frontiers as ClaimFrom's three arrays ($5, $6, $7).
void frontier_arrays(const FrontierView &view, Datum *arrays)
{
    arrays[0] = priority_array(view.priority, view.npriorities);
    ck::pg_call([&] {
        int k = view.npriorities;
        Datum r[ck::frontier_max_priorities];
        Datum i[ck::frontier_max_priorities];
        for (int j = 0; j < k; j++) {
            r[j] = TimestampTzGetDatum(view.start[j].run_at);
            i[j] = Int64GetDatum(view.start[j].id);
        }
        arrays[1] = PointerGetDatum(construct_array(r, k, TIMESTAMPTZOID, sizeof(TimestampTz), true, TYPALIGN_DOUBLE));
        arrays[2] = PointerGetDatum(construct_array(i, k, INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE));
    });
}

// The periodic full claim took the first claimable jobs in claim order, and lowered the frontier
// to any it had passed; a job it passed in a priority after the claim's last it did not reach.
// Each such known priority's first claimable job (no lock: one another claim holds only costs a
// step) lowers that priority's frontier when it lies below it, so that one interval bounds a miss
// in every priority.
void lower_to_heads(Oid queue, const FrontierView &view, int after, TimestampTz moment, int32 max_attempts, ck::Snap snap,
                    Snapshot snapshot)
{
    int rest = view.npriorities - (after + 1);
    if (rest <= 0)
        return;
    Datum values[3] = {priority_array(view.priority + after + 1, rest), TimestampTzGetDatum(moment),
                       Int32GetDatum(max_attempts)};
    const Prepared &heads = ck::queue_statement(StatementKind::Heads, queue);
    uint64 n = execute_in_index_order(queue, heads, values, snap, snapshot);
    ck::pg_call([&] {
        pfree(DatumGetPointer(values[0]));
        check_key_columns(1, 3);
        for (uint64 i = 0; i < n; i++) {
            JobKey head = job_key(i, 1, 3);
            ck::frontier_check_claimed(queue, head.priority, head.key);
        }
        SPI_freetuptable(SPI_tuptable);
    });
}

// Buries expired jobs on their last attempt (they are skipped by the claim, so they would
// otherwise linger), from the burial's frontier. Each buried job comes back if this
// transaction aborts.
void bury(Oid queue, const FrontierView &view, TimestampTz moment, ck::Snap snap, Snapshot snapshot)
{
    const Prepared &bury = ck::queue_statement(StatementKind::Bury, queue);
    Datum args[3] = {Int32GetDatum(bury.max_attempts), TimestampTzGetDatum(moment), TimestampTzGetDatum(view.bury_from)};
    uint64 n;
    {
        ck::DeadDepartures departing("lease expired on the last attempt");
        n = execute_in_index_order(queue, bury, args, snap, snapshot);
    }
    ck::count_at_commit(queue, Activity::Buried, n);
    ck::pg_call([&] {
        for (uint64 i = 0; i < n; i++) {
            JobKey was = job_key(i, 2, 1);
            ck::frontier_on_abort(queue, was.priority, was.key);
        }
        SPI_freetuptable(SPI_tuptable);
        if (view.mode != ck::ClaimMode::Full && n < static_cast<uint64>(ck::bury_batch))
            ck::frontier_bury_advance(queue, view, moment);
    });
}

// Runs one claim, its rows appended to out. Under READ COMMITTED with the library preloaded
// it reads each known priority from its frontier (queue_frontier.cpp), with a snapshot
// taken after the frontier was read; otherwise, and once per full_claim_interval, the whole
// index in one statement with the snapshot `snap`. Then, when the claim came back short (or
// every 64th claim, for a queue that never runs short), the burial.
uint64 claim_once(Oid queue, int32 batch, Interval *lease, ck::Snap snap, ReturnSetInfo *out)
{
    const Prepared &claim = ck::queue_statement(StatementKind::Claim, queue);
    Interval effective = lease ? *lease : claim.lease;
    TimestampTz moment = GetCurrentTimestamp();
    FrontierView view;
    if (!IsolationUsesXactSnapshot())
        view = ck::pg_call([&] { return ck::frontier_view(queue, moment); });
    if (view.mode == ck::ClaimMode::Discover)
        view.mode = discover(queue, &view, moment) ? ck::ClaimMode::Frontier : ck::ClaimMode::Full;
    // The frontier's rule: a snapshot taken after the view was read (READ COMMITTED).
    Snapshot snapshot = view.mode == ck::ClaimMode::Full ? nullptr
                                                           : ck::pg_call([] { return RegisterSnapshot(GetTransactionSnapshot()); });

    // With no priority known there is no statement to run, and so no privilege checked by
    // one: a caller without SELECT and UPDATE on the queue runs the full claim, which raises
    // what the hand-written claim would (or succeeds on column privileges).
    if (view.mode == ck::ClaimMode::Frontier && view.npriorities == 0 && !ck::may_claim(queue))
        view.mode = ck::ClaimMode::Full;

    uint64 n = 0;
    const Prepared *used = &claim;
    if (view.mode == ck::ClaimMode::Frontier && view.npriorities > 0) {
        // Every known priority in one statement, each from its frontier, in priority order (one
        // priority: without the arrays).
        bool one = view.npriorities == 1;
        const Prepared &from = ck::queue_statement(one ? StatementKind::ClaimFromOne : StatementKind::ClaimFrom, queue);
        used = &from;
        Datum values[7] = {Int32GetDatum(batch), IntervalPGetDatum(&effective), Int32GetDatum(claim.max_attempts),
                           TimestampTzGetDatum(moment), Int32GetDatum(view.priority[0]),
                           TimestampTzGetDatum(view.start[0].run_at), Int64GetDatum(view.start[0].id)};
        if (!one)
            frontier_arrays(view, &values[4]);
        n = execute_in_index_order(queue, from, values, snap, snapshot);
        // A claim_wait looks many times in one call: nothing of a look is kept.
        if (!one)
            ck::pg_call([&] {
                for (int j = 4; j < 7; j++)
                    pfree(DatumGetPointer(values[j]));
            });
        Reached reached = take_claimed(queue, out, view, snapshot);
        // The scan read the priorities in order: each one it left before the batch was full came
        // back short (nothing claimable is left in it up to the moment); the one it stopped in
        // got as far as its last claimed job; those after it were not read. A short batch read
        // them all.
        bool all_short = n < static_cast<uint64>(batch);
        ck::pg_call([&] {
            for (int j = 0; j < view.npriorities && (all_short || j <= reached.last_position); j++) {
                bool left = all_short || j < reached.last_position;
                ck::frontier_advance(queue, view, view.priority[j], left ? FrontierKey{moment, PG_INT64_MIN} : reached.last[j]);
            }
        });
    } else if (view.mode != ck::ClaimMode::Frontier) {
        Datum values[4] = {Int32GetDatum(batch), IntervalPGetDatum(&effective), Int32GetDatum(claim.max_attempts),
                           TimestampTzGetDatum(moment)};
        n = execute_in_index_order(queue, claim, values, snap, snapshot);
        Reached reached = take_claimed(queue, out, view, snapshot);
        // A short batch read every claimable job: nothing passed is left behind.
        if (view.mode == ck::ClaimMode::Check && n == static_cast<uint64>(batch))
            lower_to_heads(queue, view, reached.last_position, moment, claim.max_attempts, snap, snapshot);
    }
    // Also every 64th claim: in a queue that never runs short they would wait forever.
    if (n < static_cast<uint64>(batch) || ++claims_since_burial >= 64) {
        claims_since_burial = 0;
        replan_if_grown(queue, *used);
        if (ck::may_bury(queue, claim.dead_letters))
            bury(queue, view, moment, snap, snapshot);
    }
    if (snapshot != nullptr)
        ck::pg_call([&] { UnregisterSnapshot(snapshot); });
    ck::count_at_commit(queue, Activity::Claimed, n);
    return n;
}

// Default retry delay after attempt n: min(2^n, 3600) seconds, times a random factor in
// [0.5, 1) so that jobs failing together do not come back together.
Interval backoff(int32 attempts)
{
    double seconds = std::min(std::ldexp(1.0, std::min(attempts, 12)), 3600.0);
    seconds *= 0.5 + 0.5 * pg_prng_double(&pg_global_prng_state);
    Interval iv{};
    iv.time = static_cast<int64>(seconds * USECS_PER_SEC);
    return iv;
}

} // namespace

CK_FUNCTION(ck_enqueue)
{
    require_arg(fcinfo, 0, "queue");
    require_arg(fcinfo, 1, "payload");
    require_arg(fcinfo, 2, "run_at");
    require_arg(fcinfo, 3, "priority");
    Oid queue = PG_GETARG_OID(0);
    // unique_key and unique_for came with 0.3.0: a library newer than the installed SQL gets
    // four arguments.
    const Interval *window = ck::unique_for_arg(fcinfo, 5, 4);
    bool no_concurrency_key = PG_NARGS() <= 6 || PG_ARGISNULL(6);
    Datum concurrency_key = no_concurrency_key ? 0 : PG_GETARG_DATUM(6);
    bool no_unique_key = PG_NARGS() <= 4 || PG_ARGISNULL(4);
    // after came with 0.3.1.
    ck::Dependencies deps = ck::after_arg(fcinfo, 7);
    ck::spi_connect();
    if (const ck::Prepared *d = ck::queue_distribution(queue)) {
        Datum id = ck::distributed_enqueue(fcinfo, *d, 4, 6, 7);
        ck::spi_finish();
        return id;
    }
    ck::Waiting waiting;
    if (deps.n > 0)
        waiting = ck::wait_for(queue, deps);
    bool waits = waiting.n > 0 || waiting.failure != nullptr;
    if (!no_unique_key) {
        ck::Enqueued job = ck::enqueue_unique(queue, PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), PG_GETARG_DATUM(3),
                                              PG_GETARG_DATUM(4), window, concurrency_key, no_concurrency_key,
                                              waits ? &waiting : nullptr);
        ck::spi_finish();
        PG_RETURN_INT64(job.id);
    }
    if (waits) {
        ck::Enqueued job = ck::insert_unique(queue, PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), PG_GETARG_DATUM(3), 0, true,
                                             concurrency_key, no_concurrency_key, &waiting);
        ck::spi_finish();
        PG_RETURN_INT64(job.id);
    }
    ck::Placing place = ck::place_job(queue, concurrency_key, no_concurrency_key, PG_GETARG_DATUM(2));
    Datum values[5] = {PG_GETARG_DATUM(1), place.run_at, PG_GETARG_DATUM(3), concurrency_key, place.parked_run_at};
    char nulls[5] = {' ', ' ', ' ', ' ', place.parked_null};
    const Prepared &p = ck::queue_statement(no_concurrency_key ? StatementKind::Enqueue : StatementKind::EnqueueKeyed, queue);
    ck::PlacedInserts placed;
    ck::execute_plan(p.plan, values, nulls);
    bool isnull;
    Datum id = ck::result_datum(0, 1, &isnull);
    ck::spi_finish();
    return id;   // bigint is pass-by-value
}

CK_FUNCTION(ck_claim)
{
    require_arg(fcinfo, 0, "queue");
    Oid queue = PG_GETARG_OID(0);
    int32 batch = batch_arg(fcinfo, 1);
    Interval *lease = lease_arg(fcinfo, 2);
    ReturnSetInfo *out = ck::pg_call([&] { return ck::begin_result_set(fcinfo); });
    ck::spi_connect();
    if (const ck::Prepared *d = ck::queue_distribution(queue)) {
        ck::distributed_claim(fcinfo, *d, batch, lease, out);
        ck::spi_finish();
        return (Datum) 0;
    }
    // Coming back empty (or every 64th time), it resolves a batch of finished dependencies after
    // claiming (queue_dependencies.hpp).
    ck::resolve_after_claim(queue, claim_once(queue, batch, lease, ck::Snap::Caller, out));
    ck::spi_finish();
    return (Datum) 0;
}

// The earliest future run_at of the queue after `now` (a scheduled job, a retry, a lease
// end), or DT_NOEND when there is none.
// With the frontier known it looks only up to a second ahead and returns now + 1 s when
// nothing is due by then: the entries it walks are those of that second, dead ones included
// (a held xmin horizon keeps the lease ends of every job completed within a lease).
TimestampTz next_due(Oid queue, TimestampTz now)
{
    FrontierView view;
    bool known = ck::pg_call([&] { return ck::frontier_read(queue, &view); });
    uint64 n;
    if (known) {
        const Prepared &p = ck::queue_statement(StatementKind::NextDueOf, queue);
        Datum priorities = priority_array(view.priority, view.npriorities);
        TimestampTz ahead = now + USECS_PER_SEC;
        Datum values[3] = {TimestampTzGetDatum(now), priorities, TimestampTzGetDatum(ahead)};
        n = ck::execute_plan(p.plan, values, nullptr, ck::Snap::Fresh);
        bool isnull = true;
        Datum due = n > 0 ? ck::result_datum(0, 1, &isnull) : (Datum) 0;
        return isnull ? ahead : DatumGetTimestampTz(due);
    } else {
        const Prepared &p = ck::queue_statement(StatementKind::NextDue, queue);
        Datum values[1] = {TimestampTzGetDatum(now)};
        n = ck::execute_plan(p.plan, values, nullptr, ck::Snap::Fresh);
    }
    bool isnull = true;
    Datum due = n > 0 ? ck::result_datum(0, 1, &isnull) : (Datum) 0;
    return isnull ? DT_NOEND : DatumGetTimestampTz(due);
}

// Waits up to max_wait for jobs. With the shared state (shared_memory.hpp), it sleeps on its queue's
// condition variable, which commits that make jobs ready broadcast on (prepared before each
// look, so no commit is missed); without, it looks again after 10 ms, doubling to 200 ms.
// Either way it also wakes when the next scheduled job or lease end comes due.
CK_FUNCTION(ck_claim_wait)
{
    require_arg(fcinfo, 0, "queue");
    require_arg(fcinfo, 3, "max_wait");
    Oid queue = PG_GETARG_OID(0);
    int32 batch = batch_arg(fcinfo, 1);
    Interval *lease = lease_arg(fcinfo, 2);
    Interval *max_wait = interval_arg(fcinfo, 3, "max_wait", true);
    if (IsolationUsesXactSnapshot())
        throw ck::Error(ERRCODE_ACTIVE_SQL_TRANSACTION, "ck.claim_wait needs READ COMMITTED",
                        "Under REPEATABLE READ or SERIALIZABLE one snapshot would never see new jobs.");
    // A wait longer than a century, or 'infinity', is a wait without end (until statement_timeout
    // or a cancel).
    double wait_us = std::min(ck::interval_usecs(max_wait), 100.0 * 365 * USECS_PER_DAY);
    TimestampTz deadline = GetCurrentTimestamp() + static_cast<int64>(wait_us);
    bool on_commit = ck::pg_call([] { return ck::queue_wakeup_active(); });

    ReturnSetInfo *out = ck::pg_call([&] { return ck::begin_result_set(fcinfo); });
    ck::spi_connect();
    if (const ck::Prepared *d = ck::queue_distribution(queue)) {
        ck::distributed_claim_wait(fcinfo, *d, batch, lease, deadline, out);
        ck::spi_finish();
        return (Datum) 0;
    }
    // The slots of jobs a look buries are handed on at the end: no key's slot row is held while
    // the call sleeps or claims again (see ck_complete_and_claim).
    ck::DeferredDepartures departures;
    long poll_ms = 10;
    for (;;) {
        ck::pg_call([&] { ck::queue_wait_prepare(queue); });
        // Each look needs a new snapshot to see jobs committed while we wait.
        uint64 claimed = claim_once(queue, batch, lease, ck::Snap::Fresh, out);
        // Dependants it made ready are claimable once this call's transaction commits: it
        // returns rather than sleep on the rows it locked for them.
        if (ck::resolve_after_claim(queue, claimed) || claimed > 0)
            break;
        TimestampTz now = GetCurrentTimestamp();
        if (now >= deadline)
            break;
        TimestampTz wake = std::min(deadline, next_due(queue, now));
        // At most a minute per nap (the wait functions take an int of milliseconds).
        long nap_ms = static_cast<long>(std::min<TimestampTz>((wake - now + 999) / 1000, 60000));
        if (!on_commit) {
            nap_ms = std::min(nap_ms, poll_ms);
            poll_ms = std::min(poll_ms * 2, 200L);   // short looks, never a busy loop
        }
        // A long wait frees the plans invalidations retired meanwhile, as a new call would.
        if (ck::outermost_call())
            ck::plan_cache_sweep();
        ck::pg_call([&] { ck::queue_wait_sleep(std::max(nap_ms, 1L)); });
    }
    ck::pg_call([] { ck::queue_wait_cancel(); });
    departures.hand_over();
    ck::resolve_deferred(queue);
    ck::spi_finish();
    return (Datum) 0;
}

// A lost lease, as every raising acknowledgement reports it (CK005): the queue, the job and
// the token; the HINT names the form that returns a failure value instead (none for
// complete_and_claim, whose point is the raise).
static ck::Error lease_lost(const Prepared &p, Datum id, Datum token, const char *try_form)
{
    std::string hint = "Roll back what this transaction did for the job: its new holder does it.";
    if (try_form != nullptr)
        hint += ck::fmt(" %s instead of raising.", try_form);
    // The token in the DETAIL: the message stays the same for every attempt of the job.
    return ck::Error(CK_ERRCODE_LEASE_LOST,
                     ck::fmt("lease lost: job " INT64_FORMAT " of queue %s", DatumGetInt64(id), p.qualified.c_str()),
                     ck::fmt("Lease token " INT64_FORMAT " is no longer current: the lease expired and the job was "
                             "claimed again, or the job was finished or cancelled.", DatumGetInt64(token)),
                     hint);
}

// ck.complete raises CK005 when the lease was lost, ck.try_complete returns false.
static Datum complete(FunctionCallInfo fcinfo, bool raise)
{
    Ack a = ack_args(fcinfo);
    Datum values[2] = {a.id, a.token};
    ck::spi_connect();
    if (const ck::Prepared *d = ck::queue_distribution(a.queue)) {
        Datum result = ck::distributed_by_id(fcinfo, *d);
        ck::spi_finish();
        return result;
    }
    const Prepared &p = ck::statement_by_id(StatementKind::Complete, a.queue);
    bool done = ck::execute_plan(p.plan, values, nullptr) == 1;
    if (done) {
        ready_again_on_abort(a.queue, a.id, 1);
        ck::count_at_commit(a.queue, Activity::Completed);
    } else {
        ck::count_now(a.queue, Activity::LostAcks);
        if (raise)
            throw lease_lost(p, a.id, a.token, "ck.try_complete returns false");
    }
    ck::spi_finish();
    PG_RETURN_BOOL(done);
}

CK_FUNCTION(ck_complete)
{
    return complete(fcinfo, true);
}

CK_FUNCTION(ck_try_complete)
{
    return complete(fcinfo, false);
}

// ck.complete_and_claim(queue, id, lease_token, batch, lease): a worker's loop in one call.
// A lost lease raises CK005 (there is no try_ form), so whatever the worker wrote for the job
// in this transaction rolls back with it, and nothing is claimed. The completed job's
// concurrency slot is handed on after the claim: the claim may wait for a job row (PostgreSQL's
// SKIP LOCKED still waits for a row version it follows up an update chain), and a worker
// completing that job holds it while it waits for the slot row (a 40P01 deadlock in make chaos).
CK_FUNCTION(ck_complete_and_claim)
{
    Ack a = ack_args(fcinfo);
    int32 batch = batch_arg(fcinfo, 3);
    Interval *lease = lease_arg(fcinfo, 4);
    Datum values[2] = {a.id, a.token};
    ReturnSetInfo *out = ck::pg_call([&] { return ck::begin_result_set(fcinfo); });
    ck::spi_connect();
    if (const ck::Prepared *d = ck::queue_distribution(a.queue)) {
        ck::distributed_complete_and_claim(fcinfo, *d, batch, lease, out);
        ck::spi_finish();
        return (Datum) 0;
    }
    ck::DeferredDepartures departures;
    const Prepared &complete = ck::statement_by_id(StatementKind::Complete, a.queue);
    if (ck::execute_plan(complete.plan, values, nullptr) == 0) {
        ck::count_now(a.queue, Activity::LostAcks);
        throw lease_lost(complete, a.id, a.token, nullptr);
    }
    ready_again_on_abort(a.queue, a.id, 1);
    ck::count_at_commit(a.queue, Activity::Completed);
    ck::resolve_after_claim(a.queue, claim_once(a.queue, batch, lease, ck::Snap::Caller, out));
    departures.hand_over();
    ck::resolve_deferred(a.queue);
    ck::spi_finish();
    return (Datum) 0;
}

// The length of a bigint[] argument of complete_many, which must be one-dimensional (or
// empty), without NULLs, and no longer than a claim's largest batch.
int array_length_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
    require_arg(fcinfo, argno, what);
    struct Shape {
        int ndim;
        int length;
        bool has_nulls;
    };
    Shape shape = ck::pg_call([&] {
        ArrayType *a = PG_GETARG_ARRAYTYPE_P(argno);
        return Shape{ARR_NDIM(a), ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)), array_contains_nulls(a)};
    });
    if (shape.ndim > 1)
        throw ck::Error(ERRCODE_ARRAY_SUBSCRIPT_ERROR, ck::fmt("%s must be a one-dimensional array", what));
    if (shape.has_nulls)
        throw ck::Error(ERRCODE_NULL_VALUE_NOT_ALLOWED, ck::fmt("%s must not contain NULL", what));
    if (shape.length > ck::max_claim_batch)
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE,
                        ck::fmt("%s has %d elements, more than %d", what, shape.length, ck::max_claim_batch),
                        "", "Complete the jobs of one claim at a time.");
    return shape.length;
}

// The first pair of complete_many's arrays whose id the statement did not complete (the rows of
// the last execution): the lease lost that ck.complete_many reports.
static void first_lost_pair(FunctionCallInfo fcinfo, Datum *id, Datum *token)
{
    ck::pg_call([&] {
        Datum *ids;
        Datum *tokens;
        int n;
        int m;
        deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE, &ids, nullptr, &n);
        deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE, &tokens, nullptr, &m);
        // A pair whose id came back once is done; its id repeated in a later pair is not.
        bool *taken = static_cast<bool *>(palloc0(sizeof(bool) * (SPI_processed + 1)));
        for (int i = 0; i < n; i++) {
            uint64 r = 0;
            for (; r < SPI_processed; r++) {
                bool isnull;
                if (!taken[r] && SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull) == ids[i])
                    break;
            }
            if (r == SPI_processed) {
                *id = ids[i];
                *token = tokens[i];
                return;
            }
            taken[r] = true;
        }
    });
}

// ck.complete_many(queue, ids, lease_tokens) completes every pair or raises CK005 (nothing
// completed: the transaction rolls back); ck.try_complete_many returns the ids whose pair still
// held the lease and leaves the others alone.
static Datum complete_many(FunctionCallInfo fcinfo, bool raise)
{
    require_arg(fcinfo, 0, "queue");
    int ids = array_length_arg(fcinfo, 1, "ids");
    int tokens = array_length_arg(fcinfo, 2, "lease_tokens");
    if (ids != tokens)
        throw ck::Error(ERRCODE_ARRAY_SUBSCRIPT_ERROR,
                        ck::fmt("ids has %d elements but lease_tokens has %d", ids, tokens),
                        "", "Pass each job's id and the lease token its claim returned, in the same order.");
    Datum values[2] = {PG_GETARG_DATUM(1), PG_GETARG_DATUM(2)};
    ck::spi_connect();
    Oid queue = PG_GETARG_OID(0);
    if (const ck::Prepared *d = ck::queue_distribution(queue)) {
        ck::distributed_complete_many(fcinfo, *d);
        ck::spi_finish();
        return (Datum) 0;
    }
    const Prepared &p = ck::queue_statement(StatementKind::CompleteMany, queue);
    ck::plan_queue_statement(p, queue);
    uint64 done = ck::execute_plan(p.plan, values, nullptr);
    ck::count_now(queue, Activity::LostAcks, static_cast<uint64>(ids) - done);
    ck::pg_call([&] {
        for (uint64 i = 0; i < SPI_processed; i++) {
            JobKey was = job_key(i, 2, 1);
            ck::frontier_on_abort(queue, was.priority, was.key);
        }
    });
    if (raise && done < static_cast<uint64>(ids)) {
        Datum id = 0;
        Datum token = 0;
        first_lost_pair(fcinfo, &id, &token);
        throw lease_lost(p, id, token, "ck.try_complete_many returns the ids still held");
    }
    ck::count_at_commit(queue, Activity::Completed, done);
    Datum result = ck::return_result_rows(fcinfo, 1);
    ck::spi_finish();
    return result;
}

CK_FUNCTION(ck_complete_many)
{
    return complete_many(fcinfo, true);
}

CK_FUNCTION(ck_try_complete_many)
{
    return complete_many(fcinfo, false);
}

// ck.extend_lease raises CK005 when the lease was lost, ck.try_extend_lease returns NULL.
static Datum extend_lease(FunctionCallInfo fcinfo, bool raise)
{
    Ack a = ack_args(fcinfo);
    require_arg(fcinfo, 3, "lease");
    Interval *lease = lease_arg(fcinfo, 3);
    Datum values[4] = {a.id, a.token, IntervalPGetDatum(lease), TimestampTzGetDatum(GetCurrentTimestamp())};
    ck::spi_connect();
    if (const ck::Prepared *d = ck::queue_distribution(a.queue)) {
        Datum result = ck::distributed_by_id(fcinfo, *d);
        ck::spi_finish();
        return result;
    }
    const Prepared &p = ck::statement_by_id(StatementKind::ExtendLease, a.queue);
    if (ck::execute_plan(p.plan, values, nullptr) == 0) {
        ck::count_now(a.queue, Activity::LostAcks);
        if (raise)
            throw lease_lost(p, a.id, a.token, "ck.try_extend_lease returns NULL");
        ck::spi_finish();
        PG_RETURN_NULL();
    }
    ready_again_on_abort(a.queue, a.id, 2);
    bool isnull;
    Datum until = ck::result_datum(0, 1, &isnull);
    ck::spi_finish();
    return until;   // timestamptz is pass-by-value
}

CK_FUNCTION(ck_extend_lease)
{
    return extend_lease(fcinfo, true);
}

CK_FUNCTION(ck_try_extend_lease)
{
    return extend_lease(fcinfo, false);
}

// ck.fail raises CK005 when the lease was lost, ck.try_fail returns NULL; else both say what
// became of the job: retry or dead.
static Datum fail(FunctionCallInfo fcinfo, bool raise)
{
    Ack a = ack_args(fcinfo);
    Datum error = PG_ARGISNULL(3) ? (Datum) 0 : PG_GETARG_DATUM(3);
    Interval *retry_in = finite_interval_arg(fcinfo, 4, "retry_in", true,
                                             "A retry that never comes leaves the job in the queue for good, "
                                             "neither run nor dead: pick a finite delay, or ck.complete the job.");
    char error_null = PG_ARGISNULL(3) ? 'n' : ' ';

    ck::spi_connect();
    if (const ck::Prepared *d = ck::queue_distribution(a.queue)) {
        Datum result = ck::distributed_by_id(fcinfo, *d);
        ck::spi_finish();
        return result;
    }
    // Lock the job while it is still ours, then decide: the lock keeps the decision valid.
    const Prepared &lock = ck::statement_by_id(StatementKind::FailLock, a.queue);
    Datum key[2] = {a.id, a.token};
    if (ck::execute_plan(lock.plan, key, nullptr) == 0) {
        ck::count_now(a.queue, Activity::LostAcks);
        if (raise)
            throw lease_lost(lock, a.id, a.token, "ck.try_fail returns NULL");
        ck::spi_finish();
        PG_RETURN_NULL();
    }
    ck::count_at_commit(a.queue, Activity::Failed);
    ready_again_on_abort(a.queue, a.id, 2);
    bool isnull;
    int32 attempts = DatumGetInt32(ck::result_datum(0, 1, &isnull));
    const char *outcome;
    if (attempts >= lock.max_attempts) {
        const Prepared &dead = ck::statement_by_id(StatementKind::FailDead, a.queue);
        Datum values[2] = {a.id, error};
        char nulls[2] = {' ', error_null};
        ck::DeadDepartures departing(error_null == 'n' ? "failed" : ck::pg_call([&] { return TextDatumGetCString(error); }));
        ck::execute_plan(dead.plan, values, nulls);
        ck::count_at_commit(a.queue, Activity::Buried);
        outcome = "dead";
    } else {
        Interval delay = retry_in ? *retry_in : backoff(attempts);
        const Prepared &retry = ck::statement_by_id(StatementKind::FailRetry, a.queue);
        Datum values[4] = {a.id, IntervalPGetDatum(&delay), error, TimestampTzGetDatum(GetCurrentTimestamp())};
        char nulls[4] = {' ', ' ', error_null, ' '};
        ck::execute_plan(retry.plan, values, nulls);
        ck::pg_call([&] {
            ck::queue_mark_ready(a.queue);   // its waiters learn the retry time
            JobKey at = job_key(0, 1, 0, a.id);
            ck::frontier_on_commit(a.queue, at.priority, at.key);
        });
        ck::count_at_commit(a.queue, Activity::Retried);
        outcome = "retry";
    }
    ck::spi_finish();
    PG_RETURN_TEXT_P(cstring_to_text(outcome));
}

CK_FUNCTION(ck_fail)
{
    return fail(fcinfo, true);
}

CK_FUNCTION(ck_try_fail)
{
    return fail(fcinfo, false);
}

CK_FUNCTION(ck_retry_dead)
{
    require_arg(fcinfo, 0, "queue");
    require_arg(fcinfo, 1, "id");
    Oid queue = PG_GETARG_OID(0);
    Datum values[1] = {PG_GETARG_DATUM(1)};
    ck::spi_connect();
    if (const ck::Prepared *d = ck::queue_distribution(queue)) {
        Datum result = ck::distributed_by_id(fcinfo, *d);
        ck::spi_finish();
        return result;
    }
    const Prepared &p = ck::queue_statement(StatementKind::RetryDead, queue);
    bool revived = ck::execute_plan(p.plan, values, nullptr) == 1;
    ck::spi_finish();
    PG_RETURN_BOOL(revived);
}

CK_FUNCTION(ck_purge_dead)
{
    require_arg(fcinfo, 0, "queue");
    require_arg(fcinfo, 1, "older_than");
    Oid queue = PG_GETARG_OID(0);
    // Nothing died 'infinity' ago: that purge would delete nothing, surely not what was meant.
    Interval *older_than = finite_interval_arg(fcinfo, 1, "older_than", true, "older_than => '0' purges every dead letter.");
    Datum values[1] = {IntervalPGetDatum(older_than)};
    ck::spi_connect();
    if (const ck::Prepared *d = ck::queue_distribution(queue)) {
        Datum purged = ck::distributed_purge_dead(fcinfo, *d);
        ck::spi_finish();
        return purged;
    }
    const Prepared &p = ck::queue_statement(StatementKind::PurgeDead, queue);
    uint64 n = ck::execute_plan(p.plan, values, nullptr);
    ck::spi_finish();
    PG_RETURN_INT64(static_cast<int64>(n));
}
