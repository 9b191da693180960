// Wake-up on commit for ck.claim_wait. In the shared state (shared_memory.hpp), a
// small array of condition variables addressed by (database, queue): a transaction
// that made jobs of a queue ready broadcasts on that queue's slot once its commit is
// visible; an abort broadcasts nothing. Slots are hashed, so a waiter may wake for another
// queue's commit (it looks, finds nothing, sleeps again); it cannot miss one, since it
// prepares to sleep before it looks.
#pragma once

#include "base/pg.hpp"

namespace ck {

// Asks for the shared memory; called from _PG_init.
void queue_wakeup_init();

// True when the shared slots exist (attaching to them first; inside pg_call).
bool queue_wakeup_active();

// This transaction made jobs of queue ready (or scheduled them): wake its waiters at commit.
// Attaches first; a no-op without the shared slots. Raises like pg_call's callees: call it inside pg_call.
void queue_mark_ready(Oid queue);

// Wakes queue's waiters now (every queue's with InvalidOid): for a commit whose effect the
// waiters read from invalidated settings, so the broadcast must follow the invalidations (a
// resume, signal/pause.cpp). Never raises; a no-op without the shared slots.
void queue_wake_now(Oid queue);

// The wait event a claim_wait sleeps in (what pg_stat_activity shows): how a pause tells a
// sleeper from a claim in progress (signal/pause.cpp). Inside pg_call (17+ registers it).
uint32 queue_wait_event_info();

// The waiter's side, all inside pg_call: prepare before looking for jobs, then sleep up to
// timeout_ms (interruptible), and cancel once done. Without the shared slots,
// queue_wait_sleep sleeps on the backend's latch for timeout_ms.
void queue_wait_prepare(Oid queue);
void queue_wait_sleep(long timeout_ms);
void queue_wait_cancel();

// ck.await_job, whose slots are addressed by (database, queue, job): a caller sleeps on its job's
// slot, so a commit wakes only the callers of the jobs it finished (and of jobs sharing their
// slots), not every caller awaiting a job of the queue. A transaction that finished job of
// queue (completed, buried, cancelled: every such path counts it with count_at_commit, which
// calls this) wakes that job's slot at commit if anyone awaits there: a job nobody awaits costs
// a short array append. Without a job (a path that does not know which jobs it finished), or
// past the array's capacity, the commit wakes every slot where someone awaits. Never raise.
void queue_mark_finished(Oid queue, int64 job);
void queue_mark_finished(Oid queue);
// The awaiter's side: counts itself in its job's slot and prepares to sleep on it (before each
// look; false without the shared state: poll), queue_wait_sleep, and queue_await_end once done
// (also after an error: the count must not leak, so call it from a destructor or catch).
bool queue_await_prepare(Oid queue, int64 job);
void queue_await_end();

} // namespace ck
