// Job timeouts, distinct from the lease: an attempt of a job of a queue with a timeout T (ck.queues)
// ends at its claim + T whatever its heartbeats, and fails with the reason 'timeout'.
#pragma once

#include "base/spi.hpp"
#include "queue/signal/frontier.hpp"

namespace ck {

// The claim's lease on a queue with a timeout: the shorter of lease and the timeout. The
// attempt's deadline, moment + timeout, goes to the claim as $8 (timed_deadline).
Interval timed_lease(const QueuePlan &claim, const Interval &lease);
TimestampTz timed_deadline(const QueuePlan &claim, TimestampTz moment);

// With the burial: fails each attempt whose lease ended at its deadline (up to bury_batch,
// from the burial's frontier) with 'timeout', as ck.fail would: retried after the default
// backoff, or on the last attempt moved to the dead letters (the burial runs only for a caller
// that may bury: store/rights.hpp).
// Each comes back where it was if this transaction aborts. True when the batch was full (more
// may be left: the burial's frontier must not pass them).
bool time_out(Oid queue, const FrontierView &view, TimestampTz moment, Snap snap, Snapshot snapshot);

} // namespace ck
