// What every SQL function of the queue shares (entry.hpp).
#include "base/args.hpp"
#include "base/errcodes.hpp"
#include "queue/sql/entry.hpp"
#include "queue/store/statements.hpp"

extern "C" {
#include "utils/timestamp.h"
}

#include <algorithm>

namespace ck {

int32 batch_arg(FunctionCallInfo fcinfo, int argno)
{
    require_arg(fcinfo, argno, "batch");
    int32 batch = PG_GETARG_INT32(argno);
    if (batch < 1 || batch > max_claim_batch)
        throw Error(ERRCODE_INVALID_PARAMETER_VALUE,
                    fmt("batch must be between 1 and %d, got %d", max_claim_batch, batch));
    return batch;
}

Ack ack_args(FunctionCallInfo fcinfo)
{
    require_arg(fcinfo, 0, "queue");
    require_arg(fcinfo, 1, "id");
    require_arg(fcinfo, 2, "lease_token");
    return {PG_GETARG_OID(0), PG_GETARG_DATUM(1), PG_GETARG_DATUM(2)};
}

Completion completion_args(FunctionCallInfo fcinfo, const Ack &a, int result_argno)
{
    bool no_result = PG_NARGS() <= result_argno || PG_ARGISNULL(result_argno);
    return {{a.id, a.token, no_result ? (Datum) 0 : PG_GETARG_DATUM(result_argno)}, {' ', ' ', no_result ? 'n' : ' '}};
}

const Interval *unique_for_arg(FunctionCallInfo fcinfo, int argno, int key_argno)
{
    if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
        return nullptr;
    if (PG_ARGISNULL(key_argno))
        throw Error(ERRCODE_INVALID_PARAMETER_VALUE, "unique_for needs a unique_key", "",
                    "unique_for is how long a unique key stays taken; pass the key too.");
    return finite_interval_arg(fcinfo, argno, "unique_for", false,
                               "A key taken for good is a key no job will ever have again: pick a finite window "
                               "(say, longer than the period of the job it guards).");
}

Error lease_lost(const Prepared &p, Datum id, Datum token, const char *try_form)
{
    std::string hint = "Roll back what this transaction did for the job: its new holder does it.";
    if (try_form != nullptr)
        hint += fmt(" %s instead of raising.", try_form);
    // The token in the DETAIL: the message stays the same for every attempt of the job.
    return Error(CK_ERRCODE_LEASE_LOST,
                 fmt("lease lost: job " INT64_FORMAT " of queue %s", DatumGetInt64(id), p.qualified.c_str()),
                 fmt("Lease token " INT64_FORMAT " is no longer current: the lease expired and the job was "
                     "claimed again, or the job was finished or cancelled.", DatumGetInt64(token)),
                 hint);
}

TimestampTz wait_deadline(FunctionCallInfo fcinfo, int argno)
{
    Interval *max_wait = interval_arg(fcinfo, argno, "max_wait", true);
    double wait_us = std::min(interval_usecs(max_wait), 100.0 * 365 * USECS_PER_DAY);
    return GetCurrentTimestamp() + static_cast<int64>(wait_us);
}

Datum result_out_of_spi(FunctionCallInfo fcinfo, Datum result)
{
    if (fcinfo->isnull || fcinfo->flinfo->fn_retset)
        return result;
    // The result type's length and passing, looked up once per call site (fn_extra, as fmgr
    // lets a function keep what it learns about itself).
    struct ResultType {
        int16 len;
        bool byval;
    };
    return pg_call([&] {
        auto *type = static_cast<ResultType *>(fcinfo->flinfo->fn_extra);
        if (type == nullptr) {
            type = static_cast<ResultType *>(MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(ResultType)));
            get_typlenbyval(get_func_rettype(fcinfo->flinfo->fn_oid), &type->len, &type->byval);
            fcinfo->flinfo->fn_extra = type;
        }
        return type->byval ? result : SPI_datumTransfer(result, false, type->len);
    });
}

} // namespace ck
