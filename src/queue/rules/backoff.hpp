// How long a failed job waits before its next attempt when nobody says: ck.fail without retry_in,
// and an attempt that reached its timeout (engine/timeout.cpp).
#pragma once

#include "base/pg.hpp"

namespace ck {

// min(2^attempts, 3600) seconds, times a random factor in [0.5, 1) so that jobs failing together
// do not come back together.
Interval retry_backoff(int32 attempts);

} // namespace ck
