// Argument helpers shared by the entry points.
#include "args.hpp"

namespace ck {

void require_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
    if (PG_ARGISNULL(argno))
        throw Error(ERRCODE_NULL_VALUE_NOT_ALLOWED, fmt("%s must not be NULL", what));
}

double interval_usecs(const Interval *iv)
{
    return static_cast<double>(iv->time) + iv->day * static_cast<double>(USECS_PER_DAY) +
           iv->month * static_cast<double>(DAYS_PER_MONTH) * USECS_PER_DAY;
}

} // namespace ck
