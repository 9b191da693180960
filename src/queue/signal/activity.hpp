// Activity counters per queue since the shared state appeared (ck.queue_activity): at the
// server's start when preloaded, else at the first use of a queue (shared_memory.hpp). What a transaction did is counted when it commits (a
// rolled-back claim claimed nothing); what a call ran into (a lost acknowledgement, a
// refused duplicate) is counted at once, since the call's own error may roll it back.
#pragma once

#include "base/pg.hpp"

namespace ck {

enum class Activity : int {
    Enqueued,     // rows that entered the queue: ck.enqueue, plain INSERT, ck.retry_dead
    Claimed,
    Completed,
    Failed,       // ck.fail with the lease held, whatever followed
    Retried,      // ... and the job was scheduled again
    Buried,       // moved to the dead letters by ck.fail or as an expired last attempt
    Cancelled,
    LostAcks,     // an acknowledgement that found the lease gone (counted at once)
    Duplicates,   // an enqueue whose unique key was taken (counted at once)
    Kinds
};

// Defines the GUC (when preloading) and asks for the shared memory; from _PG_init.
void queue_activity_init();

// Neither raises; both are no-ops in a backend not attached to the shared state (every queue
// function attaches before it counts: queue_statement). A count of finished jobs (Completed,
// Buried, Cancelled) also wakes their ck.await_job callers at commit: given jobs (the n ids),
// only those jobs' callers; without, every caller awaiting a job (a path that does not know
// which jobs it finished).
void count_at_commit(Oid queue, Activity what, uint64 n = 1, const Datum *jobs = nullptr);
void count_now(Oid queue, Activity what, uint64 n = 1);

// One queue's counters, for ck.queue_activity: by Activity, and since when.
struct ActivityRow {
    Oid queue;
    uint64 count[static_cast<int>(Activity::Kinds)];
    TimestampTz since;
};
struct ActivityTotals {
    uint64 uncounted = 0;   // events of queues that found no free entry
    int size = 0;           // the entries there are (concurrency_kit.activity_queues)
};

// The totals, attaching to the shared state first; false when the server has no room for it.
// Inside pg_call.
bool activity_totals(ActivityTotals *totals);

// The counters of every queue of this database that still exists, palloc'd; how many. After
// activity_totals returned true. Inside pg_call.
int activity_rows(ActivityRow **rows);

} // namespace ck
