// Queues distributed over a Citus cluster (ck.distribute_queue): the coordinator's side. Each
// shard of such a queue is a queue of its own on its worker; every call here runs the same
// ck function there, on one shard, through one statement that Citus routes to it.
#pragma once

#include "base/plan_cache.hpp"

namespace ck {

// The distribution of queue, or nullptr for a queue of this node (and on every install
// without Citus): looked up once per backend and queue, then one hash lookup per call; dropped
// with the queue's relcache entry, which ck.distribute_queue invalidates. Inside SPI.
const Prepared *queue_distribution(Oid queue);

// The calls on a distributed queue, each given the coordinator's fcinfo (its first argument
// the queue) and returning what the function returns. Inside SPI.

// complete, fail, extend_lease, cancel, retry_dead: on the shard the id (argument 1) names.
Datum distributed_by_id(FunctionCallInfo fcinfo, const Prepared &d);
// enqueue and enqueue_unique (key_argno: their unique_key argument, concurrency_argno their
// concurrency_key): on the shard a key hashes to, else the next shard in turn.
Datum distributed_enqueue(FunctionCallInfo fcinfo, const Prepared &d, int key_argno, int concurrency_argno,
                          int after_argno);
// claim, claim_wait and complete_and_claim: jobs from one shard, the next ones tried only when
// it comes back short.
Datum distributed_claim(FunctionCallInfo fcinfo, const Prepared &d, int32 batch, Interval *lease, ReturnSetInfo *out);
Datum distributed_claim_wait(FunctionCallInfo fcinfo, const Prepared &d, int32 batch, Interval *lease,
                             TimestampTz deadline, ReturnSetInfo *out);
Datum distributed_complete_and_claim(FunctionCallInfo fcinfo, const Prepared &d, int32 batch, Interval *lease,
                                     ReturnSetInfo *out);
// complete_many: one call per shard the ids name.
Datum distributed_complete_many(FunctionCallInfo fcinfo, const Prepared &d);
// queue_stats and purge_dead: every shard, summed.
Datum distributed_stats(FunctionCallInfo fcinfo, const Prepared &d);
Datum distributed_purge_dead(FunctionCallInfo fcinfo, const Prepared &d);

} // namespace ck
