// The default retry delay (backoff.hpp).
#include "queue/rules/backoff.hpp"

extern "C" {
#include "common/pg_prng.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <cmath>

namespace ck {

Interval retry_backoff(int32 attempts)
{
    double seconds = std::min(std::ldexp(1.0, std::min(attempts, 12)), 3600.0);
    seconds *= 0.5 + 0.5 * pg_prng_double(&pg_global_prng_state);
    Interval iv{};
    iv.time = static_cast<int64>(seconds * USECS_PER_SEC);
    return iv;
}

} // namespace ck
