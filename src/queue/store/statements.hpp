// Queues with leases: the statements behind ck.enqueue, ck.claim and friends, prepared once
// per backend and queue (see queue.cpp for their SQL).
#pragma once

#include "base/plan_cache.hpp"

namespace ck {

// Longest batch a claim may ask for.
constexpr int32 max_claim_batch = 10000;

// Most jobs a claim buries at a time.
constexpr int bury_batch = 100;

// The prepared statement of that kind for the queue relid; raises 42P01/22023-style errors
// when relid is not a table registered by ck.create_queue.
const Prepared &queue_statement(StatementKind kind, Oid relid);

// A job enqueued with a unique key (queue_unique.cpp): its id, and whether this call inserted
// it (false: the job that already held the key, or took its window). With a window (not
// nullptr), the key stays taken for that long from now, even after its job has left.
struct Enqueued {
    int64 id;
    bool inserted;
};
struct Waiting;
Enqueued enqueue_unique(Oid queue, Datum payload, Datum run_at, Datum priority, Datum unique_key,
                        const Interval *window, Datum concurrency_key = 0, bool no_concurrency_key = true,
                        const Waiting *waiting = nullptr);

// The insert behind both: with no_unique_key, a plain insert (which cannot conflict); with
// waiting (queue_dependencies.hpp), the job goes in parked until the jobs it waits for are done.
Enqueued insert_unique(Oid queue, Datum payload, Datum run_at, Datum priority, Datum unique_key, bool no_unique_key,
                       Datum concurrency_key, bool no_concurrency_key, const Waiting *waiting);

// The unique_for argument argno: NULL (nullptr), or positive and finite, and only with a key.
const Interval *unique_for_arg(FunctionCallInfo fcinfo, int argno, int key_argno);

// Whether the caller may bury: move jobs out of the queue (SELECT, DELETE) into its dead
// letters (INSERT).
bool may_bury(Oid queue, Oid dead_letters);

// Whether the caller may claim: SELECT and UPDATE on the queue.
bool may_claim(Oid queue);

// The number of pages of table relid now.
BlockNumber table_blocks(Oid relid);

} // namespace ck
