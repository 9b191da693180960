// Unique jobs: ck.enqueue(..., unique_key) and ck.enqueue_unique. At most one job per key is
// in the queue (waiting, scheduled or running): the key is a column of the job's row under a
// partial unique index, so it is free again the moment the row leaves the queue (completed,
// buried, cancelled), and it stays put through claims, retries and lease extensions, which
// change other columns (queues that put a state in the unique index raised 23505 on a retry).
// A duplicate inserts nothing: INSERT ... ON CONFLICT DO NOTHING waits for a transaction still
// inserting the key and decides on its outcome, so a rolled-back holder frees the key (an
// advisory lock and a lookup would report a job that never committed). The holder's id is
// then read with a fresh snapshot; if the holder left the queue in between, the insert is
// tried again. A time window (unique_for) keeps the key taken after its job has left, in
// ck.unique_windows, which is what a periodic job's per-tick key needs.
#include "base/args.hpp"
#include "queue/queue.hpp"
#include "queue/queue_activity.hpp"
#include "queue/queue_dependencies.hpp"
#include "queue/queue_distributed.hpp"
#include "queue/queue_limits.hpp"
#include "base/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include <algorithm>

namespace ck {

// Each round either inserts, or finds a holder that committed before the lookup's snapshot;
// only a holder leaving between the two sends it round again. A job that waits for others
// (waiting) goes in parked, with no slot of its concurrency key yet, and its edges after it.
// Any other job of a limited key goes in where the key's slot row suggests, and takes its slot
// only once it is in (queue_limits.hpp: the insert may wait for the holder's departure, which
// needs that row); a duplicate touches no slot.
Enqueued insert_unique(Oid queue, Datum payload, Datum run_at, Datum priority, Datum unique_key, bool no_unique_key,
                       Datum concurrency_key, bool no_concurrency_key, const Waiting *waiting)
{
    const Prepared &insert = queue_statement(waiting ? StatementKind::EnqueueWaiting : StatementKind::EnqueueUnique, queue);
    const Prepared &find = queue_statement(StatementKind::FindUnique, queue);
    bool keyed = waiting == nullptr && !no_concurrency_key;
    Placing guess{run_at, 0, 'n'};
    if (keyed)
        guess = guess_placing(queue, concurrency_key, run_at);
    // A job whose dependency was buried goes in waiting (for one) and is buried at once.
    Datum last = waiting ? Int32GetDatum(std::max(waiting->n, 1)) : guess.parked_run_at;
    Datum values[6] = {payload, waiting ? run_at : guess.run_at, priority, unique_key, concurrency_key, last};
    char nulls[6] = {' ', ' ', ' ', no_unique_key ? 'n' : ' ', no_concurrency_key ? 'n' : ' ', waiting ? ' ' : guess.parked_null};
    bool isnull;
    PlacedInserts placed;
    for (int round = 0; round < 100; round++) {
        if (execute_plan(insert.plan, values, nulls) == 1) {
            int64 id = DatumGetInt64(result_datum(0, 1, &isnull));
            if (waiting)
                record_dependant(queue, id, *waiting);
            else if (keyed)
                settle_placing(queue, id, concurrency_key, guess);
            return {id, true};
        }
        if (execute_plan(find.plan, &values[3], nullptr, Snap::Fresh) == 1)
            return {DatumGetInt64(result_datum(0, 1, &isnull)), false};
    }
    throw Error(ERRCODE_T_R_SERIALIZATION_FAILURE,
                fmt("unique key \"%s\" of queue %s changed hands 100 times during one enqueue",
                    TextDatumGetCString(unique_key), insert.qualified.c_str()),
                "", "Retry the transaction.");
}

// With a window, the key's row in ck.unique_windows decides first: taken (no row, or its window
// has ended), the job is enqueued as without one (a job still in the queue with that key is
// returned), and the row names it; not taken, the job that took the window is the answer,
// whether or not it is still in the queue.
Enqueued enqueue_unique(Oid queue, Datum payload, Datum run_at, Datum priority, Datum unique_key,
                        const Interval *window, Datum concurrency_key, bool no_concurrency_key, const Waiting *waiting)
{
    Datum key[2] = {ObjectIdGetDatum(queue), unique_key};
    bool isnull;
    if (window != nullptr) {
        TimestampTz now = GetCurrentTimestamp();
        Datum until = pg_call([&] {
            return DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(now),
                                       IntervalPGetDatum(const_cast<Interval *>(window)));
        });
        Datum purge[2] = {key[0], TimestampTzGetDatum(now)};
        execute_plan(queue_statement(StatementKind::WindowPurge, queue).plan, purge, nullptr);
        Datum take[4] = {key[0], unique_key, until, TimestampTzGetDatum(now)};
        if (execute_plan(queue_statement(StatementKind::WindowTake, queue).plan, take, nullptr) == 0) {
            execute_plan(queue_statement(StatementKind::WindowHolder, queue).plan, key, nullptr, Snap::Fresh);
            count_now(queue, Activity::Duplicates);
            return {DatumGetInt64(result_datum(0, 1, &isnull)), false};
        }
    }
    Enqueued job = insert_unique(queue, payload, run_at, priority, unique_key, false, concurrency_key, no_concurrency_key,
                                 waiting);
    if (!job.inserted)
        count_now(queue, Activity::Duplicates);
    if (window != nullptr) {
        Datum set[3] = {key[0], unique_key, Int64GetDatum(job.id)};
        execute_plan(queue_statement(StatementKind::WindowSetJob, queue).plan, set, nullptr);
    }
    return job;
}

const Interval *unique_for_arg(FunctionCallInfo fcinfo, int argno, int key_argno)
{
    if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
        return nullptr;
    if (PG_ARGISNULL(key_argno))
        throw Error(ERRCODE_INVALID_PARAMETER_VALUE, "unique_for needs a unique_key", "",
                    "unique_for is how long a unique key stays taken; pass the key too.");
    return finite_interval_arg(fcinfo, argno, "unique_for", false,
                               "A key taken for good is a key no job will ever have again: pick a finite window "
                               "(say, longer than the period of the job it guards).");
}

} // namespace ck

// ck.enqueue_unique(queue, unique_key, payload, run_at, priority, unique_for): the job's id and
// whether this call inserted it (false: a job with that key was already in the queue, or took
// the key's window).
CK_FUNCTION(ck_enqueue_unique)
{
    static const char *const arg_names[] = {"queue", "unique_key", "payload", "run_at", "priority"};
    for (int i = 0; i < 5; i++)
        ck::require_arg(fcinfo, i, arg_names[i]);
    const Interval *window = ck::unique_for_arg(fcinfo, 5, 1);
    bool no_concurrency_key = PG_NARGS() <= 6 || PG_ARGISNULL(6);
    ck::spi_connect();
    if (const ck::Prepared *d = ck::queue_distribution(PG_GETARG_OID(0))) {
        Datum row = ck::distributed_enqueue(fcinfo, *d, 1, 6, -1);
        ck::spi_finish();
        return row;
    }
    ck::Enqueued job = ck::enqueue_unique(PG_GETARG_OID(0), PG_GETARG_DATUM(2), PG_GETARG_DATUM(3), PG_GETARG_DATUM(4),
                                          PG_GETARG_DATUM(1), window, no_concurrency_key ? 0 : PG_GETARG_DATUM(6),
                                          no_concurrency_key);
    ck::spi_finish();
    return ck::pg_call([&] {
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "ck.enqueue_unique must return a record");
        Datum values[2] = {Int64GetDatum(job.id), BoolGetDatum(job.inserted)};
        bool nulls[2] = {false, false};
        return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
    });
}
