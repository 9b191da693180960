// Queues distributed over a Citus cluster (ck.distribute_queue): the coordinator's side. Each
// shard of such a queue is a queue of its own on its worker; every call here runs the same
// ck function there, on one shard, through one statement that Citus routes to it.
#pragma once

#include "base/plan_cache.hpp"

#include <string>
#include <vector>

namespace ck {

// A distributed queue's shards: per shard, its value of column part and its name.
struct Distribution : Prepared {
    std::vector<int32> parts;
    std::vector<std::string> shards;
    mutable size_t next_shard = 0;   // where this backend's next claim starts
};

// The distribution of queue, or nullptr for a queue of this node (and on every install
// without Citus): looked up once per backend and queue, then one hash lookup per call; dropped
// with the queue's relcache entry, which ck.distribute_queue invalidates. Inside SPI.
const Distribution *queue_distribution(Oid queue);

// How a call on a distributed queue goes to its shards; the coordinator's fcinfo (its first
// argument the queue) is passed on, and the function's own result returned.
struct Route {
    enum class Kind {
        ById,               // complete, fail, extend_lease, cancel, retry_dead: the shard argument 1 (an id) names
        Enqueue,            // enqueue, enqueue_unique: the shard a key hashes to, else the next in turn
        Claim,              // claim: jobs from one shard, the next ones only when it comes back short
        ClaimWait,          // claim_wait: the same, sleeping in between (engine/wait.hpp)
        CompleteAndClaim,   // the job's shard first
        CompleteMany,       // one call per shard the ids name
        Stats,              // queue_stats: every shard, summed
        EveryShardCount,    // purge_dead, retry_dead_matching, purge_dead_matching: every shard, their counts summed
    };
    Kind kind;
    int key_argno = -1;           // Enqueue: the unique_key argument (-1: none)
    int concurrency_argno = -1;   // ... the concurrency_key argument
    int after_argno = -1;         // ... the after argument (-1: none)
    int32 batch = 0;              // the claims: the batch, the lease, where rows go, until when
    Interval *lease = nullptr;
    ReturnSetInfo *out = nullptr;
    TimestampTz deadline = 0;
};

// Runs the call on the distributed queue d by route r. Inside SPI.
Datum distributed_call(FunctionCallInfo fcinfo, const Distribution &d, const Route &r);

} // namespace ck
