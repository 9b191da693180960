// The enqueue on a queue of this node: ck.enqueue and ck.enqueue_unique after their arguments
// were read (sql/enqueue.cpp).
#pragma once

#include "base/pg.hpp"
#include "queue/rules/dependencies.hpp"

namespace ck {

// A job to insert: its columns as the call gave them (a NULL unique or concurrency key: none).
struct NewJob {
    Datum payload;
    Datum run_at;
    Datum priority;
    Datum unique_key = 0;
    bool no_unique_key = true;
    Datum concurrency_key = 0;
    bool no_concurrency_key = true;
};

// ck.enqueue: the job's id. A job with a unique key goes through enqueue_unique (the id of the
// job that holds the key when it is taken); a job of a limited concurrency key takes its slot
// or is parked (rules/limits.hpp); one that names jobs still in the queue (deps) waits for them.
int64 enqueue(Oid queue, const NewJob &job, const Interval *window, const Dependencies &deps);

// A job enqueued with a unique key: its id, and whether this call inserted it (false: the job
// that already held the key, or took its window). With a window (not nullptr), the key stays
// taken for that long from now, even after its job has left.
struct Enqueued {
    int64 id;
    bool inserted;
};
Enqueued enqueue_unique(Oid queue, const NewJob &job, const Interval *window, const Waiting *waiting = nullptr);

// The insert behind both: with no unique key, a plain insert (which cannot conflict); with
// waiting (rules/dependencies.hpp), the job goes in parked until the jobs it waits for are done.
Enqueued insert_job(Oid queue, const NewJob &job, const Waiting *waiting);

} // namespace ck
