// Pause and resume: what a pause tells the claims of its queue, and how it waits for those in
// flight, so that no claim commits after a pause has committed (src/README.md, "Pause and
// resume"). The state itself is ck.queues.paused_at, read with the queue's settings (QueuePlan).
#pragma once

#include "queue/store/statements.hpp"

namespace ck {

// Asks for the shared counters of pauses in progress; from _PG_init.
void queue_pause_init();

// The claim's gate, run before each claim reads the queue's settings: locks the queue as the claim
// will (RowShareLock, held to the end of the transaction), then sees whether a pause of the queue
// is in progress, then takes the invalidations sent so far. Returns the claim's settings, or
// nullptr while the queue is paused or a pause of it is in progress (raising 42501 then, as the
// claim would, for a caller without SELECT and UPDATE on the queue).
const QueuePlan *open_claims(Oid queue);

// What this backend's last open_claims found: open, paused (committed), or a pause in progress;
// and whether its transaction held the claims' lock on the queue before that call. A claim_wait
// that finds a pause in progress returns when it held the lock before (the pause may be waiting
// for its transaction); when it took the lock in that look, the pause may have found it or not:
// it naps briefly and looks again (the pause's end wakes it sooner).
enum class ClaimGate { Open, Paused, Pausing };
ClaimGate last_claim_gate();
bool claim_lock_held_before();

// ck.pause_queue, after its update of ck.queues: marks a pause of queue in progress until this
// transaction ends (raising 0A000 at PREPARE TRANSACTION), then waits for every other transaction
// that holds the claims' lock on the queue to end (bounded by lock_timeout: 55P03), but for
// claim_wait callers asleep that have claimed nothing (no xid). Once per queue and transaction
// (the pauses of several keys of one queue count once).
void pause_claims(Oid queue);

// ck.resume_queue: wakes the queue's claim_wait callers once this transaction's commit and its
// invalidations have been sent (at commit; nothing on abort).
void wake_at_resume(Oid queue);

} // namespace ck
