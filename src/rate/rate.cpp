// ck.try_rate and ck.rate: at most n calls per period for a key any SQL names (rate/take.hpp).
#include "base/args.hpp"
#include "base/errcodes.hpp"
#include "rate/take.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

namespace {

struct Call {
    text *key;
    int32 n;
    Interval *period;
};

Call read_call(FunctionCallInfo fcinfo)
{
    ck::require_arg(fcinfo, 0, "key");
    ck::require_arg(fcinfo, 1, "n");
    ck::require_arg(fcinfo, 2, "period");
    Interval *period = ck::finite_interval_arg(fcinfo, 2, "period", false,
                                               "A rate counts calls over a finite period, such as '1 minute'.");
    // Past a century (as PostgreSQL counts '100 years': 1,200 months of 30 days) a window is of
    // no use, and a far longer one would start before timestamptz's range.
    if (ck::interval_usecs(period) > 1200.0 * 30 * USECS_PER_DAY)
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE, "period must be at most 100 years");
    return {PG_GETARG_TEXT_PP(0), PG_GETARG_INT32(1), period};
}

} // namespace

CK_FUNCTION(ck_try_rate)
{
    Call c = read_call(fcinfo);
    return BoolGetDatum(ck::rate_take(c.key, c.n, c.period));
}

CK_FUNCTION(ck_rate)
{
    Call c = read_call(fcinfo);
    if (ck::rate_take(c.key, c.n, c.period))
        return BoolGetDatum(true);
    TimestampTz next = ck::rate_next(c.key, c.n, c.period);
    // palloc'd in the call's memory context; copied before anything else runs.
    const char *key = ck::pg_call([&] { return quote_literal_cstr(text_to_cstring(c.key)); });
    const char *period =
        ck::pg_call([&] { return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(c.period))); });
    const char *when = next == 0 ? "now" : ck::pg_call([&] { return pstrdup(timestamptz_to_str(next)); });
    throw ck::Error(CK_ERRCODE_RATE_EXCEEDED, ck::fmt("rate key %s is at its rate: %d calls per %s", key, c.n, period),
                    ck::fmt("The next call is counted from %s.", when),
                    "ck.try_rate returns false instead of raising.");
}
