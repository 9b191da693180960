// The queue's wait loop (wait.hpp). The waiter prepares to sleep before each look, so a commit
// that comes between the look and the sleep still wakes it.
#include "base/boundary.hpp"
#include "base/plan_cache.hpp"
#include "queue/engine/wait.hpp"
#include "queue/signal/wakeup.hpp"

extern "C" {
#include "utils/timestamp.h"
}

#include <algorithm>

namespace ck {

void wait_for_jobs(Oid queue, WakeOn on, TimestampTz deadline, bool sweep, const std::function<bool()> &look,
                   const std::function<TimestampTz(TimestampTz)> &due, int64 job)
{
    long poll_ms = 10;
    for (;;) {
        // Whether a commit wakes us (false without the shared state: poll).
        bool on_commit = pg_call([&] {
            if (on == WakeOn::Finished)
                return queue_await_prepare(queue, job);
            queue_wait_prepare(queue);
            return queue_wakeup_active();
        });
        if (look())
            break;
        TimestampTz now = GetCurrentTimestamp();
        if (now >= deadline)
            break;
        TimestampTz wake = std::min(deadline, due(now));
        // At most a minute per nap (the wait functions take an int of milliseconds).
        long nap_ms = static_cast<long>(std::min<TimestampTz>((wake - now + 999) / 1000, 60000));
        if (!on_commit) {
            nap_ms = std::min(nap_ms, poll_ms);
            poll_ms = std::min(poll_ms * 2, 200L);   // short looks, never a busy loop
        }
        if (sweep && outermost_call())
            plan_cache_sweep();
        pg_call([&] { queue_wait_sleep(std::max(nap_ms, 1L)); });
    }
    pg_call([] { queue_wait_cancel(); });
}

} // namespace ck
