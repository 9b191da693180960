// The enqueue, and unique jobs: ck.enqueue(..., unique_key) and ck.enqueue_unique. At most one job per key is
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
#include "base/boundary.hpp"
#include "base/spi.hpp"
#include "queue/engine/enqueue.hpp"
#include "queue/rules/dependencies.hpp"
#include "queue/rules/limits.hpp"
#include "queue/signal/activity.hpp"
#include "queue/store/statements.hpp"

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
// only once it is in (rules/limits.hpp: the insert may wait for the holder's departure, which
// needs that row); a duplicate touches no slot.
Enqueued insert_job(Oid queue, const NewJob &job, const Waiting *waiting)
{
    const QueuePlan &insert = queue_statement(waiting ? QueueStatement::EnqueueWaiting : QueueStatement::EnqueueUnique, queue);
    const QueuePlan &find = queue_statement(QueueStatement::FindUnique, queue);
    bool keyed = waiting == nullptr && !job.no_concurrency_key;
    Placing guess{job.run_at, 0, 'n'};
    if (keyed)
        guess = guess_placing(queue, job.concurrency_key, job.run_at);
    // A job whose dependency was buried goes in waiting (for one) and is buried at once.
    Datum last = waiting ? Int32GetDatum(std::max(waiting->n, 1)) : guess.parked_run_at;
    Datum values[6] = {job.payload, waiting ? job.run_at : guess.run_at, job.priority, job.unique_key, job.concurrency_key, last};
    char nulls[6] = {' ', ' ', ' ', job.no_unique_key ? 'n' : ' ', job.no_concurrency_key ? 'n' : ' ',
                     waiting ? ' ' : guess.parked_null};
    bool isnull;
    PlacedInserts placed;
    for (int round = 0; round < 100; round++) {
        if (queue_execute(insert, queue, values, nulls) == 1) {
            int64 id = DatumGetInt64(result_datum(0, 1, &isnull));
            if (waiting)
                record_dependant(queue, id, *waiting);
            else if (keyed)
                settle_placing(queue, id, job.concurrency_key, guess);
            return {id, true};
        }
        if (queue_execute(find, queue, &values[3], nullptr, Snap::Fresh) == 1)
            return {DatumGetInt64(result_datum(0, 1, &isnull)), false};
    }
    throw Error(ERRCODE_T_R_SERIALIZATION_FAILURE,
                fmt("unique key \"%s\" of queue %s changed hands 100 times during one enqueue",
                    TextDatumGetCString(job.unique_key), insert.qualified.c_str()),
                "", "Retry the transaction.");
}

// With a window, the key's row in ck.unique_windows decides first: taken (no row, or its window
// has ended), the job is enqueued as without one (a job still in the queue with that key is
// returned), and the row names it; not taken, the job that took the window is the answer,
// whether or not it is still in the queue.
Enqueued enqueue_unique(Oid queue, const NewJob &new_job, const Interval *window, const Waiting *waiting)
{
    Datum unique_key = new_job.unique_key;
    Datum key[2] = {ObjectIdGetDatum(queue), unique_key};
    bool isnull;
    if (window != nullptr) {
        TimestampTz now = GetCurrentTimestamp();
        Datum until = pg_call([&] {
            return DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(now),
                                       IntervalPGetDatum(const_cast<Interval *>(window)));
        });
        Datum purge[2] = {key[0], TimestampTzGetDatum(now)};
        queue_execute(queue_statement(QueueStatement::WindowPurge, queue), queue, purge);
        Datum take[4] = {key[0], unique_key, until, TimestampTzGetDatum(now)};
        if (queue_execute(queue_statement(QueueStatement::WindowTake, queue), queue, take) == 0) {
            queue_execute(queue_statement(QueueStatement::WindowHolder, queue), queue, key, nullptr, Snap::Fresh);
            count_now(queue, Activity::Duplicates);
            return {DatumGetInt64(result_datum(0, 1, &isnull)), false};
        }
    }
    Enqueued job = insert_job(queue, new_job, waiting);
    if (!job.inserted)
        count_now(queue, Activity::Duplicates);
    if (window != nullptr) {
        Datum set[3] = {key[0], unique_key, Int64GetDatum(job.id)};
        queue_execute(queue_statement(QueueStatement::WindowSetJob, queue), queue, set);
    }
    return job;
}

int64 enqueue(Oid queue, const NewJob &job, const Interval *window, const Dependencies &deps)
{
    Waiting waiting;
    if (deps.n > 0)
        waiting = wait_for(queue, deps);
    bool waits = waiting.n > 0 || waiting.failure != nullptr;
    if (!job.no_unique_key)
        return enqueue_unique(queue, job, window, waits ? &waiting : nullptr).id;
    if (waits)
        return insert_job(queue, job, &waiting).id;
    Placing place = place_job(queue, job.concurrency_key, job.no_concurrency_key, job.run_at);
    Datum values[5] = {job.payload, place.run_at, job.priority, job.concurrency_key, place.parked_run_at};
    char nulls[5] = {' ', ' ', ' ', ' ', place.parked_null};
    const QueuePlan &p =
        queue_statement(job.no_concurrency_key ? QueueStatement::Enqueue : QueueStatement::EnqueueKeyed, queue);
    PlacedInserts placed;
    queue_execute(p, queue, values, nulls);
    bool isnull;
    return DatumGetInt64(result_datum(0, 1, &isnull));
}

} // namespace ck
