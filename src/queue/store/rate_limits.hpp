// A queue's rate limits (ck.set_rate_limit), read with its claim's plan and kept with it: claims of
// a queue without limits read nothing more.
#pragma once

#include "base/pg.hpp"

#include <string>
#include <unordered_map>

namespace ck {

// The stripes of a key's window in ck.rate_starts: stripe i counts its share of max_jobs (max_jobs /
// 8, one more for i < max_jobs % 8; none from max_jobs on), so up to 8 claims of one key count at
// once, each on its own row (rules/rate.hpp).
constexpr int rate_stripes = 8;

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
