// Prepared statements kept per backend, keyed by statement kind, table OID and the
// caller's column arguments; dropped when the table's relcache entry is invalidated.
#pragma once

#include "base/pg.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ck {

enum class StatementKind : uint8_t {
    Decrement,
    Increment,
    Transition,
    ReadAsText,      // the current value of a column, for the messages of raising forms
    QueueConfig,     // a queue's row of ck.queues
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
    NamespaceLookup,
    NamespaceRegister,
    VersionUpdate,   // ck.update_if_version: one plan per table and set of changed columns
    ReadVersion,     // a row's current version, for the stale error
    LockRows,        // ck.lock_rows: one plan per table, key type and mode
    Distribution,    // a queue's row of ck.distributed_queues (queue_distributed.cpp)
    DistributionOf,  // the distribution of one queue, or none: cached per queue
    ShardCall,       // a ck function run on one shard of a distributed queue (key_type: the function)
};

struct PlanKey {
    StatementKind kind;
    Oid relid;
    Oid key_type;         // type of the key argument as the caller passed it
    NameData column;
    NameData key_column;  // empty: the primary key
    std::string columns;  // more column names, each ended by '\0' (the columns an update sets)

    PlanKey(StatementKind k, Oid rel, Oid ktype, const char *col, const char *keycol, std::string cols = {});
    bool operator==(const PlanKey &o) const;
};

// A kept plan and what messages about its table need.
struct Prepared {
    SPIPlanPtr plan = nullptr;
    std::string table;        // bare name
    std::string qualified;    // schema.name
    std::string column;
    std::string key_column;
    Oid key_type = InvalidOid;
    // queue statements: the queue's settings from ck.queues
    int32 max_attempts = 0;
    Interval lease{};
    BlockNumber planned_blocks = 0;   // the claim: the queue's size when it was planned
    Oid dead_letters = InvalidOid;    // the queue's dead-letter table
    bool has_dependencies = false;    // the queue has the columns of dependencies (0.3.1)
    mutable bool planned = false;     // its generic plan has been made (see queue.cpp)
    bool by_id = false;               // every read of the queue is by id (queue_plan.hpp)
    // ck.lock_rows on a Citus table: its waits may be on other nodes; on a distributed table
    // each_plan locks one key, run for each row (key) of plan
    bool citus = false;
    SPIPlanPtr each_plan = nullptr;
    // distributed queues (DistributionOf): per shard, its value of column part and its name
    std::vector<int32> parts;
    std::vector<std::string> shards;
    mutable size_t next_shard = 0;    // where this backend's next claim starts
};

// The valid entry for key, or nullptr. An entry, once returned, stays where it is (rebuilt in
// place after an invalidation) and its plans stay allocated until plan_cache_sweep.
const Prepared *plan_cache_lookup(const PlanKey &key);

// Frees the plans and entries invalidation retired. run_boundary calls it at the start of an
// outermost call, the one point where no caller can hold an entry or a plan of one.
void plan_cache_sweep();

// Bumped by every relcache invalidation; a plan built across a change is stored as
// already stale, so the next call rebuilds it.
uint64_t plan_cache_generation();

const Prepared &plan_cache_store(const PlanKey &key, Prepared &&prepared, uint64_t generation);

// Registers the relcache callback; called once from _PG_init.
void plan_cache_init();

// Look up, or build with build() (which returns a Prepared with a kept plan) and keep.
template <typename Build>
const Prepared &prepare_once(const PlanKey &key, Build &&build)
{
    if (const Prepared *p = plan_cache_lookup(key))
        return *p;
    uint64_t generation = plan_cache_generation();
    return plan_cache_store(key, build(), generation);
}

} // namespace ck
