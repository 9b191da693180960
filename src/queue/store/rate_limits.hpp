// A queue's rate limits (ck.set_rate_limit), read with its claim's plan and kept with it: claims of
// a queue without limits read nothing more.
#pragma once

#include "base/pg.hpp"

#include <string>
#include <unordered_map>

namespace ck {

struct RateLimit {
    int32 max_jobs;
    Interval period;
    int64 width;   // the bucket width of period (rate/window.hpp)
};

struct RateLimits {
    std::unordered_map<std::string, RateLimit> keyed;
    bool has_default = false;   // the default: every key without a limit of its own, and the jobs without a key
    RateLimit fallback{};
    bool any() const { return has_default || !keyed.empty(); }
};

// The queue's rows of ck.rate_limits. Outside pg_call (runs SPI).
RateLimits read_rate_limits(Oid queue);

// The limit of a job's key (keyed false: a job without a key): its own, else the default; nullptr
// when none.
const RateLimit *rate_limit_of(const RateLimits &limits, bool keyed, const std::string &key);

} // namespace ck
