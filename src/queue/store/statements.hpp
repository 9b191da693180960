// The queue's bottom floor: every statement the queue runs on its tables, prepared once per
// backend and queue (the SQL is in statements.cpp), and the one way to run them.
#pragma once

#include "base/plan_cache.hpp"
#include "base/spi.hpp"
#include "queue/store/paused_keys.hpp"
#include "queue/store/rate_limits.hpp"

namespace ck {

// Longest batch a claim may ask for.
constexpr int32 max_claim_batch = 10000;

// Most jobs a claim buries at a time.
constexpr int bury_batch = 100;

// A priority the claim frontier knows costs a claim one index descent while it has no ready job
// (ClaimFrom reads them in one statement): past this many, claims read the whole index.
constexpr int frontier_max_priorities = 64;

enum class QueueStatement : uint8_t {
    Enqueue,
    EnqueueKeyed,    // the same with a concurrency key
    EnqueueUnique,   // with a unique key (and maybe a concurrency key): nothing when a job holds the key
    FindUnique,      // the job holding a unique key
    WindowTake,      // a unique key's time window in ck.unique_windows: taken, or nothing
    WindowHolder,    // the job that took a key's window
    WindowSetJob,
    WindowPurge,     // a few of the queue's windows that have ended
    SlotPeek,        // a key's free slots, read without a lock (no row: no limit, or new)
    SlotLock,        // a limited concurrency key's slot row, locked: its free slots (no row: no limit, or new)
    SlotCreate,      // the row of a key seen for the first time, at its limit (none without a limit)
    SlotDecrement,
    SlotIncrement,
    Park,            // a job of a full key: held back at run_at 'infinity'
    HandOver,        // a departed job's slot to the oldest parked job of its key, back at its own run_at
    UnparkJob,       // a parked job that got its key's slot (a dependant ready at last, a guess settled)
    Cancel,          // a job -> dead letters, with the reason cancelled
    EnqueueWaiting,  // a job that waits for others (maybe with keys): parked, its count in waiting_for
    DepLock,         // the listed jobs still in the queue, locked FOR KEY SHARE
    DepMark,         // ... and marked as having dependants
    DepDead,         // the first of the listed jobs that is a dead letter, and why
    DepEdges,        // a dependant's rows of ck.job_dependencies
    DepDeparted,     // a job with dependants left: its row of ck.dependency_departures
    DepNext,         // the next departure to resolve, locked (others' skipped)
    DepAny,          // whether the queue has a departure to resolve
    DepTake,         // a batch of a departure's edges, removed
    DepDone,         // a departure without edges left
    DepRelease,      // dependants counted down (ready at zero when they have no concurrency key)
    DepBury,         // dependants -> dead letters, with the reason
    Claim,           // the whole claim index in order
    ClaimFrom,       // the known priorities in order, each from its frontier
    ClaimFromOne,    // the same for a queue of one known priority, without the loop over arrays
    Priorities,      // a queue's distinct priorities (a loose scan)
    Heads,           // the first claimable job of each given priority, unlocked (the periodic full claim)
    Bury,            // expired jobs on their last attempt -> dead letters
    Complete,
    CompleteMany,
    FailLock,
    FailRetry,
    FailDead,
    ExtendLease,
    RetryDead,
    PurgeDead,
    Stats,
    NextDue,         // the earliest future run_at of a queue (a schedule or a lease end)
    NextDueOf,       // the same over given priorities
    TimedOut,        // leases ended at their attempt's timeout, locked (engine/timeout.cpp)
    RetryDeadMatching,   // a batch of dead letters matching a filter -> the queue (dead_letters.cpp)
    PurgeDeadMatching,   // a batch of dead letters matching a filter, deleted
    JobFind,         // a job by id: in the queue (waiting, running), else its last history record
    JobDead,         // a job by id among the dead letters (buried or cancelled)
    JobGiven,        // whether an id was ever given (the identity sequence's last value): gone or unknown
    Pause,           // ck.queues.paused_at set ($1 the queue), unless paused already
    Resume,          // ... and cleared
    RateTake,        // a claimed job's start counted on a stripe of its key with room no claim holds (rules/rate.cpp)
    RateCreate,      // the stripe rows of a rate-limited key seen for the first time (or with more stripes now)
    RatePutOff,      // when a job over its key's rate may start: the next free moment, booked on a stripe
    RateDefer,       // a job claimed over its key's rate: back in the queue at that moment, unclaimed
    RateRescale,     // a key's counts moved to its limit's bucket width (the period changed)
    RateProbe,       // a key's stripes read: their lockers, which are active, of another width, with room
    RateWait,        // a job's start counted on a given stripe, waiting for the claim holding it
    KeyPause,        // a concurrency key's row of ck.paused_keys made ($1 queue, $2 key), unless paused already
    KeyResume,       // ... and removed
    KeySettle,       // the key's jobs parked, or settled under its limit again (ck_internal.settle_paused_key)
    KeyTouch,        // the queue's row of ck.queues rewritten as it is: its plans dropped at commit (claims reread the keys)
    KeyPark,         // a job claimed of a paused key: parked, unclaimed, while the key's row is there (rules/key_pause.cpp)
};

// A queue statement's plan and the queue's settings from ck.queues.
struct QueuePlan : Prepared {
    int32 max_attempts = 0;
    Interval lease{};
    BlockNumber planned_blocks = 0;   // the claim: the queue's size when it was planned
    Oid dead_letters = InvalidOid;    // the queue's dead-letter table
    bool has_dependencies = false;    // the queue has the columns of dependencies (0.3.1)
    bool apart = false;               // its generic plan is made apart from the execution (plans.hpp)
    bool by_id = false;               // ... and every read of the queue in it is by id
    mutable bool planned = false;     // that plan has been made
    bool has_timeout = false;         // the queue has the column timeout_at (1.1.0)
    bool timed = false;               // ... and a timeout in ck.queues: claims set each attempt's deadline
    Interval timeout{};               // that timeout
    Oid history = InvalidOid;         // the queue's history of finished jobs (ck.set_history), or none
    bool paused = false;              // the queue's claims are paused (ck.queues.paused_at, 1.1.0)
    RateLimits rates;                 // the claim: the queue's rate limits (ck.set_rate_limit)
    PausedKeys paused_keys;           // the claim: the queue's paused concurrency keys (ck.paused_keys)
};

// The prepared statement of that kind for the queue relid; raises 42P01/22023-style errors
// when relid is not a table registered by ck.create_queue. Use it for the queue's settings;
// run it with queue_execute.
const QueuePlan &queue_statement(QueueStatement kind, Oid relid);

// Runs statement p of queue: the one way every queue statement runs. A statement planned apart
// (plans.hpp) gets its plan made here, right before the execution, so that no invalidation can
// come in between. With a snapshot (a claim's, taken after its frontier was read) it runs with
// that one instead of `snap`. Returns SPI_processed.
uint64 queue_execute(const QueuePlan &p, Oid queue, Datum *values, const char *nulls = nullptr,
                     Snap snap = Snap::Caller, Snapshot snapshot = nullptr);

// The number of pages of table relid now.
BlockNumber table_blocks(Oid relid);

} // namespace ck
