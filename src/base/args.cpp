// Argument helpers shared by the entry points.
#include "base/args.hpp"

extern "C" {
#include "utils/timestamp.h"
}

#include <algorithm>
#include <cmath>
#include <climits>

#if PG_VERSION_NUM < 170000
// Intervals have no infinities before PostgreSQL 17.
#define INTERVAL_NOT_FINITE(i) false
#endif

namespace ck {

void require_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
    if (PG_ARGISNULL(argno))
        throw Error(ERRCODE_NULL_VALUE_NOT_ALLOWED, fmt("%s must not be NULL", what));
}

Oid polymorphic_arg_type(FunctionCallInfo fcinfo, int argno, const char *what)
{
    Oid type = get_fn_expr_argtype(fcinfo->flinfo, argno);
    if (!OidIsValid(type))
        throw Error(ERRCODE_INDETERMINATE_DATATYPE, fmt("could not determine the type of the %s", what));
    return type;
}

Interval *interval_arg(FunctionCallInfo fcinfo, int argno, const char *what, bool zero_ok)
{
    if (PG_ARGISNULL(argno))
        return nullptr;
    Interval *iv = PG_GETARG_INTERVAL_P(argno);
    Interval zero{};
    int cmp = DatumGetInt32(pg_call([&] {
        return DirectFunctionCall2(interval_cmp, IntervalPGetDatum(iv), IntervalPGetDatum(&zero));
    }));
    if (cmp < 0 || (cmp == 0 && !zero_ok))
        throw Error(ERRCODE_INVALID_PARAMETER_VALUE, fmt("%s must be %s", what, zero_ok ? "zero or positive" : "positive"));
    return iv;
}

// '-infinity' has already failed interval_arg's sign test: only 'infinity' gets here.
Interval *finite_interval_arg(FunctionCallInfo fcinfo, int argno, const char *what, bool zero_ok, const char *hint)
{
    Interval *iv = interval_arg(fcinfo, argno, what, zero_ok);
    if (iv != nullptr && INTERVAL_NOT_FINITE(iv))
        throw Error(ERRCODE_INVALID_PARAMETER_VALUE, fmt("%s must be finite", what), "", hint);
    return iv;
}

Interval *lease_arg(FunctionCallInfo fcinfo, int argno)
{
    return finite_interval_arg(fcinfo, argno, "lease", false,
                               "A lease that never ends keeps the job from every other worker after a crash: "
                               "take a finite lease and renew it with ck.extend_lease.");
}

int timeout_ms_arg(FunctionCallInfo fcinfo, int argno, bool zero_ok, const char *detail)
{
    if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
        return -1;
    double us = interval_usecs(PG_GETARG_INTERVAL_P(argno));
    if (us < 0 || (us == 0 && !zero_ok))
        throw Error(ERRCODE_INVALID_PARAMETER_VALUE, zero_ok ? "timeout must not be negative" : "timeout must be positive",
                    detail);
    if (us == 0)
        return 0;
    double ms = us / 1000.0;
    return ms >= INT_MAX ? INT_MAX : std::max(1, static_cast<int>(ms + 0.999));
}

double interval_usecs(const Interval *iv)
{
    if (INTERVAL_NOT_FINITE(iv))
        return iv->time < 0 ? -HUGE_VAL : HUGE_VAL;   // -infinity has every field at its minimum
    return static_cast<double>(iv->time) + iv->day * static_cast<double>(USECS_PER_DAY) +
           iv->month * static_cast<double>(DAYS_PER_MONTH) * USECS_PER_DAY;
}

void warn_outside_transaction_block(const char *function)
{
    // As PostgreSQL's own check for SET LOCAL: not in a subtransaction (the caller's block
    // may be one), nor in a procedure that controls its transactions (ck.retry, a CALL that
    // commits), where the lock lasts until the procedure's next commit.
    if (IsTransactionBlock() || IsSubTransaction() || SPI_inside_nonatomic_context())
        return;
    pg_call([&] {
        ereport(WARNING, (errcode(ERRCODE_NO_ACTIVE_SQL_TRANSACTION),
                          errmsg("%s outside a transaction block: the lock is released when this statement ends",
                                 function),
                          errhint("Call it after BEGIN, in the transaction whose work it protects.")));
    });
}

} // namespace ck
