// Concurrency limits: slots per key, parked jobs and the hand-over (see rules/limits.hpp).
// Why the counts hold: every change of a key's free slots happens while its row in
// ck.concurrency_slots is locked, and the jobs are read after that lock was taken (a new
// statement with the latest snapshot): an enqueue that parked its job and committed before a
// departure took the lock is seen by it and unparked; one that waits for the lock finds the slot
// the departure freed (a job already inserted parked, by guess_placing, then unparks itself).
// A departure that hands its slot straight to a parked job changes no count and takes no lock.
// Under REPEATABLE READ an enqueue whose slot row changed since the transaction's snapshot fails
// with 40001 at the lock; a departure reads the latest rows, whatever its snapshot.
#include "queue/rules/limits.hpp"
#include "base/boundary.hpp"
#include "queue/store/statements.hpp"
#include "queue/rules/handover.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/store/place.hpp"
#include "queue/signal/wakeup.hpp"
#include "base/spi.hpp"

extern "C" {
#include "executor/executor.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace ck {

KeyedJobs keyed_jobs(Tuplestorestate *rows, TupleDesc desc, bool inserted)
{
    KeyedJobs jobs;
    AttrNumber id = job_column(desc, "id", INT8OID);
    AttrNumber key = job_column(desc, "concurrency_key", TEXTOID);
    AttrNumber parked = job_column(desc, "parked_run_at", TIMESTAMPTZOID);
    if (rows == nullptr || id == InvalidAttrNumber || key == InvalidAttrNumber || parked == InvalidAttrNumber)
        return jobs;   // a queue made before 0.3.0 and not updated: no keys
    // Only an insert asks whether a job is held back already; a departure needs no run_at.
    AttrNumber run_at = inserted ? job_column(desc, "run_at", TIMESTAMPTZOID) : InvalidAttrNumber;
    int64 count = tuplestore_tuple_count(rows);
    jobs.id = static_cast<int64 *>(palloc(sizeof(int64) * (count + 1)));
    jobs.key = static_cast<Datum *>(palloc(sizeof(Datum) * (count + 1)));
    jobs.parked = static_cast<bool *>(palloc(sizeof(bool) * (count + 1)));
    if (inserted)
        jobs.held_back = static_cast<bool *>(palloc0(sizeof(bool) * (count + 1)));
    TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
    int reader = tuplestore_alloc_read_pointer(rows, EXEC_FLAG_REWIND);
    tuplestore_select_read_pointer(rows, reader);
    tuplestore_rescan(rows);
    while (tuplestore_gettupleslot(rows, true, false, slot)) {
        bool null_id, null_key, not_parked;
        Datum k = slot_getattr(slot, key, &null_key);
        Datum i = slot_getattr(slot, id, &null_id);
        (void) slot_getattr(slot, parked, &not_parked);
        if (null_key || null_id)
            continue;
        jobs.id[jobs.n] = DatumGetInt64(i);
        jobs.key[jobs.n] = PointerGetDatum(PG_DETOAST_DATUM_COPY(k));
        jobs.parked[jobs.n] = !not_parked;
        if (!not_parked && run_at != InvalidAttrNumber) {
            bool null_run_at;
            Datum at = slot_getattr(slot, run_at, &null_run_at);
            jobs.held_back[jobs.n] = !null_run_at && TIMESTAMP_IS_NOEND(DatumGetTimestampTz(at));
        }
        jobs.n++;
    }
    tuplestore_select_read_pointer(rows, 0);
    ExecDropSingleTupleTableSlot(slot);
    return jobs;
}

namespace {

int placed_inserts = 0;

// Locks the key's slot row and returns its free slots; false when the key has no limit. A key
// seen for the first time gets its row (a concurrent first enqueue of it waits for the other's
// insert, then locks that row, with a snapshot that sees it).
bool lock_slot(Oid queue, Datum key, int32 *free)
{
    Datum slot[2] = {ObjectIdGetDatum(queue), key};
    const QueuePlan &lock = queue_statement(QueueStatement::SlotLock, queue);
    if (queue_execute(lock, queue, slot, nullptr) == 0) {
        queue_execute(queue_statement(QueueStatement::SlotCreate, queue), queue, slot, nullptr);
        if (queue_execute(lock, queue, slot, nullptr, Snap::Fresh) == 0)
            return false;
    }
    bool isnull;
    *free = DatumGetInt32(result_datum(0, 1, &isnull));
    return true;
}

} // namespace

PlacedInserts::PlacedInserts() { placed_inserts++; }
PlacedInserts::~PlacedInserts() { placed_inserts--; }

bool inserts_placed()
{
    return placed_inserts > 0;
}

Placing place_job(Oid queue, Datum key, bool no_key, Datum run_at)
{
    Placing p{run_at, 0, 'n'};
    if (no_key)
        return p;
    Datum slot[2] = {ObjectIdGetDatum(queue), key};
    int32 free;
    if (!lock_slot(queue, key, &free))
        return p;   // the key has no limit
    if (free > 0)
        queue_execute(queue_statement(QueueStatement::SlotDecrement, queue), queue, slot, nullptr);
    else
        p = {TimestampTzGetDatum(DT_NOEND), run_at, ' '};
    return p;
}

Placing guess_placing(Oid queue, Datum key, Datum run_at)
{
    Datum slot[2] = {ObjectIdGetDatum(queue), key};
    bool isnull;
    if (queue_execute(queue_statement(QueueStatement::SlotPeek, queue), queue, slot, nullptr) == 0 ||
        DatumGetInt32(result_datum(0, 1, &isnull)) > 0)
        return {run_at, 0, 'n'};
    return {TimestampTzGetDatum(DT_NOEND), run_at, ' '};
}

void settle_placing(Oid queue, int64 id, Datum key, const Placing &guess)
{
    bool guessed_ready = guess.parked_null == 'n';
    Datum run_at = guessed_ready ? guess.run_at : guess.parked_run_at;
    bool ready = place_job(queue, key, false, run_at).parked_null == 'n';
    if (ready == guessed_ready)
        return;
    if (ready) {
        unpark_job(queue, id, run_at, Snap::Caller);
        return;
    }
    Datum job[1] = {Int64GetDatum(id)};
    queue_execute(queue_statement(QueueStatement::Park, queue), queue, job, nullptr);
}

void unpark_job(Oid queue, int64 id, Datum from, Snap snap)
{
    Datum job[2] = {Int64GetDatum(id), from};
    if (queue_execute(queue_statement(QueueStatement::UnparkJob, queue), queue, job, nullptr, snap) == 1)
        made_ready(queue, 0);
}

void made_ready(Oid queue, uint64 row)
{
    pg_call([&] { job_made_ready(queue, job_place(row, 1, 3)); });
}

void job_made_ready(Oid queue, const JobPlace &at)
{
    frontier_on_commit(queue, at.priority, at.place);
    queue_mark_ready(queue);
}

void limits_on_insert(Oid queue, const KeyedJobs &jobs)
{
    spi_connect();
    for (int i = 0; i < jobs.n; i++) {
        Datum slot[2] = {ObjectIdGetDatum(queue), jobs.key[i]};
        int32 free;
        if (!lock_slot(queue, jobs.key[i], &free))
            continue;   // the key has no limit
        if (free > 0 && !jobs.parked[i]) {
            queue_execute(queue_statement(QueueStatement::SlotDecrement, queue), queue, slot, nullptr);
        } else if (!jobs.held_back[i]) {   // a job loaded parked (a restore, a bulk load) needs no second version
            Datum id[1] = {Int64GetDatum(jobs.id[i])};
            queue_execute(queue_statement(QueueStatement::Park, queue), queue, id, nullptr);
        }
    }
    spi_finish();
}

namespace {

int deferring = 0;
// The noted departures: queue and key (its bytes: the trigger's memory is gone by hand_over).
std::vector<std::pair<Oid, std::string>> deferred;

void defer_departure(Oid queue, Datum key)
{
    const text *t = reinterpret_cast<const text *>(DatumGetPointer(key));   // detoasted by keyed_jobs
    deferred.emplace_back(queue, std::string(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)));
}

// The oldest parked job of the key takes the slot, if the key has a limit and not more jobs than
// that limit (free >= 0); true when one did. The slot row is read, not locked.
bool hand_to_parked(Oid queue, Datum key, Datum now)
{
    int in_place = hand_over_in_place(queue, key, now);
    if (in_place >= 0)
        return in_place == 1;
    Datum hand[3] = {key, now, ObjectIdGetDatum(queue)};
    if (queue_execute(queue_statement(QueueStatement::HandOver, queue), queue, hand, nullptr, Snap::Latest) == 0)
        return false;
    made_ready(queue, 0);
    return true;
}

// The oldest parked job of the key takes the slot a departed job held, or the slot is freed.
// Outside pg_call, inside SPI. The statements read with the latest snapshot, under REPEATABLE
// READ too: a parking enqueue that committed after the caller's snapshot leaves the slot row as
// it was, and a departure reading the jobs as of that snapshot would free the slot under it.
void hand_over_slot(Oid queue, Datum key)
{
    Datum now = TimestampTzGetDatum(GetCurrentTimestamp());
    // The common case, without the slot row's lock: a parked job seen takes the slot over, and the
    // key's count of jobs not parked is unchanged whatever an enqueue or a limit change of the key
    // does meanwhile (they count under the lock; the job is ours from the pick on).
    if (hand_to_parked(queue, key, now))
        return;
    // The slot may be freed only with the row locked and the jobs read after that: an enqueue that
    // parked its job before the lock is seen and unparked.
    Datum slot[2] = {ObjectIdGetDatum(queue), key};
    if (queue_execute(queue_statement(QueueStatement::SlotLock, queue), queue, slot, nullptr, Snap::Latest) == 0)
        return;   // the key has no limit (or it was removed)
    if (!hand_to_parked(queue, key, now))
        queue_execute(queue_statement(QueueStatement::SlotIncrement, queue), queue, slot, nullptr, Snap::Latest);
}

} // namespace

DeferredDepartures::DeferredDepartures() { deferring++; }

bool departures_deferred()
{
    return deferring > 0;
}

DeferredDepartures::~DeferredDepartures()
{
    if (--deferring == 0)
        deferred.clear();
}

void DeferredDepartures::hand_over()
{
    // An inner scope leaves its keys to the outermost one. Keys in one order: two calls that
    // hand over several (a completion and the claim's burial) lock them alike.
    std::vector<std::pair<Oid, std::string>> keys;
    if (deferring == 1)
        keys.swap(deferred);
    std::sort(keys.begin(), keys.end());
    for (const auto &k : keys) {
        Datum key = pg_call([&] { return PointerGetDatum(cstring_to_text_with_len(k.second.data(), k.second.size())); });
        hand_over_slot(k.first, key);
    }
}

void limits_on_delete(Oid queue, const KeyedJobs &jobs)
{
    if (departures_deferred()) {
        for (int i = 0; i < jobs.n; i++)
            if (!jobs.parked[i])   // a parked job held no slot
                defer_departure(queue, jobs.key[i]);
    } else if (jobs.n > 0) {
        spi_connect();
        for (int i = 0; i < jobs.n; i++)
            if (!jobs.parked[i])
                hand_over_slot(queue, jobs.key[i]);
        spi_finish();
    }
}

} // namespace ck
