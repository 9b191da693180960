// The queue's one wait loop: claim_wait's, for a queue of this node and a distributed one alike,
// and ck.await_job's. Look, and while the look found nothing, sleep until a commit wakes the queue
// (signal/wakeup.hpp), the next job comes due, or the deadline.
#pragma once

#include "base/pg.hpp"

#include <functional>

namespace ck {

// What wakes the waiter: a commit that made jobs of the queue ready (claim_wait), or one that
// finished the job awaited (ck.await_job, which counts itself among that job's awaiters until
// queue_await_end).
enum class WakeOn { Ready, Finished };

// look() claims (or looks for the job) and says whether the wait is over; due(now) is when a job comes due by itself
// (a schedule, a retry, a lease end: DT_NOEND for never). Each nap lasts at most a minute; without
// the shared state (no wake-up on commit) it looks again after 10 ms, doubling to 200 ms.
// Returns when look() says so or the deadline has passed; a cancel or statement_timeout ends it
// as an error. With sweep, each nap first frees the plans invalidations retired meanwhile, as a
// new call would: only for a caller that holds no plan cache entry across its looks. job is the
// job awaited (WakeOn::Finished).
void wait_for_jobs(Oid queue, WakeOn on, TimestampTz deadline, bool sweep, const std::function<bool()> &look,
                   const std::function<TimestampTz(TimestampTz)> &due, int64 job = 0);

} // namespace ck
