// A queue's rate limits, read from ck.rate_limits when its claim is planned.
#include "queue/store/rate_limits.hpp"
#include "queue/store/queue_rows.hpp"
#include "rate/window.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

namespace ck {

namespace {

// Not per queue (hence not a QueueStatement): one plan for every queue.
enum class RateLimitStatement : uint8_t { Read };

} // namespace

RateLimits read_rate_limits(Oid queue)
{
    // None from an extension not yet updated to 1.1.0.
    PlanKey key(RateLimitStatement::Read, InvalidOid, InvalidOid, "", nullptr);
    uint64 n = read_queue_rows(key, "rate_limits",
                               "SELECT concurrency_key, max_jobs, period FROM ck.rate_limits WHERE queue OPERATOR(pg_catalog.=) $1",
                               queue, Snap::ReadOnly);
    RateLimits limits;
    for (uint64 i = 0; i < n; i++) {
        bool key_null, isnull;
        Datum k = result_datum(i, 1, &key_null);
        RateLimit limit{DatumGetInt32(result_datum(i, 2, &isnull)), *DatumGetIntervalP(result_datum(i, 3, &isnull)), 0};
        limit.width = rate_width(&limit.period);
        if (key_null) {
            limits.has_default = true;
            limits.fallback = limit;
        } else {
            text *t = pg_call([&] { return DatumGetTextPP(k); });
            limits.keyed.emplace(std::string(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)), limit);
        }
    }
    return limits;
}

const RateLimit *rate_limit_of(const RateLimits &limits, bool keyed, const std::string &key)
{
    if (keyed) {
        auto it = limits.keyed.find(key);
        if (it != limits.keyed.end())
            return &it->second;
    }
    return limits.has_default ? &limits.fallback : nullptr;
}

} // namespace ck
