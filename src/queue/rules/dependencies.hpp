// Dependencies between jobs (ck.enqueue(..., after)): a job that names jobs still in the queue
// waits for them, parked at run_at 'infinity' with the number it waits for in waiting_for, one
// row of ck.job_dependencies per job it waits for. A job with dependants (has_dependants) that
// leaves the queue is recorded in ck.dependency_departures by its row trigger; resolving a
// departure removes its edges a batch at a time: a completed job counts its dependants down
// (each is ready, or goes to its concurrency key's limit, at zero); a buried or cancelled one
// buries them, with the reason. A departure resolves at most one batch itself (so completing a
// job costs the same whatever its number of dependants), and so does a claim that comes back
// empty while departures are pending: the rest of a wide fan-out follows as workers ask for jobs.
#pragma once

#include "base/pg.hpp"

namespace ck {

// Most jobs one job may wait for.
constexpr int max_dependencies = 100000;

// Most dependency edges one departure, or one empty claim, resolves.
constexpr int resolve_batch = 256;

// The after argument argno: its job ids, sorted and without repeats (n = 0: none). NULL
// elements, ids below 1 and more than max_dependencies ids are errors (22004, 22023, 54000).
struct Dependencies {
    int n = 0;
    int64 *id = nullptr;
};
Dependencies after_arg(FunctionCallInfo fcinfo, int argno);

// Before a job that names deps is inserted: the listed jobs still in the queue are locked
// (FOR KEY SHARE: they cannot leave until this transaction ends, and claims skip them
// meanwhile) and marked as having dependants. `waiting` says how many the job waits for; a
// listed job that is already a dead letter (buried, cancelled) gives the reason the new job is
// buried at once. The others are gone, completed (or never existed): nothing to wait for.
struct Waiting {
    int n = 0;
    int64 *id = nullptr;             // the jobs waited for
    const char *failure = nullptr;   // the new job's burial reason, or nullptr
};
Waiting wait_for(Oid queue, const Dependencies &deps);

// After the job (id) was inserted parked with waiting_for = w.n: its edges, or its burial.
void record_dependant(Oid queue, int64 id, const Waiting &w);

// A claim's turn, after the last claim of a call, which claimed `claimed` jobs: when it came
// back empty, and at every 64th claim of the backend (a busy queue never runs empty, and the
// rest of a wide fan-out must not wait for it to), under READ COMMITTED, when the queue has
// departures to resolve and the caller may bury, resolves a batch, ready for other claims once
// this commits. True when it resolved anything. Never followed by another claim in the same
// call: a claim can wait for a job row, and the completion holding that row may be waiting to
// count down a dependant this one just locked.
bool resolve_after_claim(Oid queue, uint64 claimed);

// For the same reason, while a DeferredDepartures is in scope (ck.complete_and_claim,
// ck.claim_wait) the departure trigger only records; the call resolves after its claims.
void resolve_deferred(Oid queue);

// From the row trigger: job id left the queue (inside an SPI connection).
void dependency_left(Oid queue, Datum id);

// While one is in scope, the jobs its statement removes from a queue go to the dead letters
// with `reason` (a departure out of scope counts as completed, plain DELETEs included).
class DeadDepartures {
public:
    explicit DeadDepartures(const char *reason);
    ~DeadDepartures();
    DeadDepartures(const DeadDepartures &) = delete;
    DeadDepartures &operator=(const DeadDepartures &) = delete;

private:
    const char *outer_;
};

} // namespace ck
