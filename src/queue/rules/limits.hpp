// Concurrency limits per key (ck.set_concurrency_limit): at most max_running jobs of a key are
// ready or leased at once. Each such job holds one of the key's slots from its enqueue until it
// leaves the queue (completed, buried, cancelled, deleted); the key's other jobs wait parked at
// run_at 'infinity', out of every claim's way, so a claim never walks a full key's backlog and
// needs no check of its own. The queue's statement triggers keep the accounts: an inserted job
// takes a free slot or is parked (ck.queue_ready), a job that leaves hands its slot to the
// oldest parked job of its key, or frees it (ck.queue_left). Whatever changes a key's free slots
// locks its row of ck.concurrency_slots first and reads the jobs after, with a snapshot taken
// once it holds it; a hand-over to a parked job changes no count and needs no lock.
#pragma once

#include "base/pg.hpp"
#include "queue/store/place.hpp"
#include "base/spi.hpp"

extern "C" {
#include "commands/trigger.h"
}

namespace ck {

// The jobs of a transition table that carry a concurrency key.
struct KeyedJobs {
    int n = 0;
    int64 *id = nullptr;
    Datum *key = nullptr;   // text
    bool *parked = nullptr;
    bool *held_back = nullptr;   // inserted parked and at run_at 'infinity' already: nothing to update
};

// Reads them (palloc'd in the current memory context); held_back only for `inserted` rows. Inside
// pg_call.
KeyedJobs keyed_jobs(Tuplestorestate *rows, TupleDesc desc, bool inserted);

// The inserted jobs take a slot of their key or are parked (an UPDATE). Outside pg_call (runs
// SPI). Not for the jobs ck.enqueue inserts: it settles their slot first (below).
void limits_on_insert(Oid queue, const KeyedJobs &jobs);

// The departed jobs of a limited key hand their slots on (or note them, while a
// DeferredDepartures is in scope). Outside pg_call.
void limits_on_delete(Oid queue, const KeyedJobs &jobs);

// Whether the rows being inserted are ck.enqueue's, their slots settled (a PlacedInserts is in
// scope): then the insert trigger has nothing to read for the limits. Never raises.
bool inserts_placed();

// ck.enqueue's side: before it inserts a job of concurrency key `key` (NULL: none), the key's
// slot row is locked and the job takes a free slot or is to be inserted parked. The result is
// what the insert's run_at and parked_run_at must be.
struct Placing {
    Datum run_at;
    Datum parked_run_at;
    char parked_null;      // ' ' (parked) or 'n', for SPI
};
Placing place_job(Oid queue, Datum key, bool no_key, Datum run_at);

// A job with a unique key is inserted before its key's slot row is locked: the insert can wait
// for a transaction that removes the unique key's holder, and that removal's trigger waits for
// the slot row (held here, that closed a deadlock). So the placement is guessed from the slot
// row read without a lock (a key without a row has room), and settled once the job is in: the
// slot row locked, a free slot taken, and the job parked or unparked if the guess was wrong.
Placing guess_placing(Oid queue, Datum key, Datum run_at);
void settle_placing(Oid queue, int64 id, Datum key, const Placing &guess);

// A job just unparked is ready once this commits: claimers and the claim frontier learn it
// (row `row` of the last SPI result: priority, run_at, id). Outside pg_call.
void made_ready(Oid queue, uint64 row);
// The same for a job whose place in the claim index is known. Plain C: inside pg_call.
void job_made_ready(Oid queue, const JobPlace &at);

// Parked job id, now holding its key's slot, ready from its own run_at or `from` if later.
void unpark_job(Oid queue, int64 id, Datum from, Snap snap);

// While one is in scope, the rows the queue's insert trigger sees were placed by place_job.
class PlacedInserts {
public:
    PlacedInserts();
    ~PlacedInserts();
    PlacedInserts(const PlacedInserts &) = delete;
    PlacedInserts &operator=(const PlacedInserts &) = delete;
};

// While one is in scope, the queue's delete trigger (ck.queue_left) only notes the limited keys
// of the jobs that left, and hand_over() does their slot work later in the same call. A call
// that waits for job rows after removing a job (ck.complete_and_claim's claim) uses it so that
// it holds no key's slot row while it waits: a departure locks its job's row first and the
// key's slot second, so a slot holder waiting for a job row can close a deadlock with it.
class DeferredDepartures {
public:
    DeferredDepartures();
    ~DeferredDepartures();   // forgets what was not handed over (the call failed)
    DeferredDepartures(const DeferredDepartures &) = delete;
    DeferredDepartures &operator=(const DeferredDepartures &) = delete;
    // Each noted departure hands its slot on, in key order. Outside pg_call, inside SPI.
    void hand_over();
};

// Whether a DeferredDepartures is in scope (the dependency trigger defers its work too).
bool departures_deferred();

} // namespace ck
