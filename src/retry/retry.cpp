// CALL ck.retry(sql, isolation, max_attempts): runs sql in a fresh top-level transaction
// per attempt, at the requested isolation level, retrying serialization failures and
// deadlocks (and lock timeouts when asked) with capped, fully jittered exponential backoff.
// A retry needs a new transaction, not a subtransaction: under REPEATABLE READ and
// SERIALIZABLE a subtransaction keeps the old snapshot and fails again.
#include "base/args.hpp"
#include "base/citus.hpp"

extern "C" {
#include "common/pg_prng.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
}

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace {

// Backoff before attempt n + 1: uniform in [0, min(cap, base * 2^(n - 1))].
constexpr double backoff_base_ms = 5.0;
constexpr double backoff_cap_ms = 1000.0;

int32 current_attempt = 0;   // of the ck.retry running in this backend, 0 outside

// Per-backend counters, for ck.retry_stats().
struct Counters {
    int64 calls = 0;
    int64 attempts = 0;
    int64 retries = 0;
    int64 exhausted = 0;
} counters;

int isolation_level(const char *name)
{
    std::string s(name);
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    if (s == "read committed")
        return XACT_READ_COMMITTED;
    if (s == "repeatable read")
        return XACT_REPEATABLE_READ;
    if (s == "serializable")
        return XACT_SERIALIZABLE;
    throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE, ck::fmt("unknown isolation level \"%s\"", name),
                    "", "Use 'read committed', 'repeatable read' or 'serializable'.");
}

bool retryable(int sqlstate, bool on_lock_timeout)
{
    return sqlstate == ERRCODE_T_R_SERIALIZATION_FAILURE || sqlstate == ERRCODE_T_R_DEADLOCK_DETECTED ||
           (on_lock_timeout && sqlstate == ERRCODE_LOCK_NOT_AVAILABLE);
}

void sleep_before_attempt(int32 next)
{
    double ceiling = std::min(backoff_cap_ms, backoff_base_ms * std::ldexp(1.0, std::min(next - 2, 20)));
    long ms = static_cast<long>(ceiling * pg_prng_double(&pg_global_prng_state));
    ck::pg_call([&] {
        if (ms > 0) {
            (void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms, PG_WAIT_EXTENSION);
            ResetLatch(MyLatch);
        }
        CHECK_FOR_INTERRUPTS();
    });
}

// One attempt in the current (fresh) transaction: the statements run in a subtransaction
// only so that an error can be caught; then the whole transaction commits.
void attempt(const char *sql, int level)
{
    ck::pg_call([&] {
        MemoryContext cxt = CurrentMemoryContext;
        ResourceOwner owner = CurrentResourceOwner;
        XactIsoLevel = level;   // no snapshot has been taken in this transaction yet
        BeginInternalSubTransaction(nullptr);
        MemoryContextSwitchTo(cxt);
        int rc = SPI_execute(sql, false, 0);
        if (rc == SPI_ERROR_TRANSACTION)
            ereport(ERROR, (errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
                            errmsg("ck.retry runs its statements as one transaction: they must not control it"),
                            errhint("Remove BEGIN, COMMIT, ROLLBACK and SAVEPOINT from the statements.")));
        if (rc == SPI_ERROR_COPY)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("ck.retry cannot run COPY to or from the client"),
                            errhint("Copy to or from a file or a program, or run the COPY outside ck.retry.")));
        if (rc < 0)
            elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
        ReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(cxt);
        CurrentResourceOwner = owner;
        SPI_commit();
    });
}

// A 57014 that Citus's distributed deadlock detector caused (it marks the backend before it signals;
// asking clears the mark).
bool cancelled_by_citus_detector(const ErrorData *edata)
{
    return edata->sqlerrcode == ERRCODE_QUERY_CANCELED && ck::citus_cancelled_for_deadlock();
}

// After a failed attempt: roll the subtransaction (if still open) and the transaction back,
// leaving a fresh transaction without a snapshot for the next attempt.
void roll_back(MemoryContext cxt, ResourceOwner owner)
{
    ck::pg_call([&] {
        MemoryContextSwitchTo(cxt);
        if (GetCurrentTransactionNestLevel() > 1) {
            RollbackAndReleaseCurrentSubTransaction();
            MemoryContextSwitchTo(cxt);
            CurrentResourceOwner = owner;
        }
        SPI_rollback();
    });
}

// The function's one result row (its OUT parameters), none of them NULL.
Datum result_row(FunctionCallInfo fcinfo, Datum *values)
{
    return ck::pg_call([&] {
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "return type must be a row type");
        desc = BlessTupleDesc(desc);
        bool *nulls = (bool *) palloc0(desc->natts * sizeof(bool));
        return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
    });
}

} // namespace

// CALL ck.retry(sql text, isolation text, max_attempts int, retry_lock_timeout boolean,
//               INOUT attempts int)
CK_FUNCTION(ck_retry)
{
    auto *call = reinterpret_cast<CallContext *>(fcinfo->context);
    if (call == nullptr || !IsA(call, CallContext) || call->atomic || IsTransactionBlock())
        throw ck::Error(ERRCODE_ACTIVE_SQL_TRANSACTION, "ck.retry cannot run inside a transaction block",
                        "Each attempt commits or rolls back a transaction of its own.",
                        "CALL it on its own, outside BEGIN ... COMMIT and not from a function.");
    static const char *const arg_names[] = {"sql", "isolation", "max_attempts", "retry_lock_timeout"};
    for (int i = 0; i < 4; i++)
        ck::require_arg(fcinfo, i, arg_names[i]);
    const char *sql_arg = text_to_cstring(PG_GETARG_TEXT_PP(0));
    const char *isolation_arg = text_to_cstring(PG_GETARG_TEXT_PP(1));
    int32 max_attempts = PG_GETARG_INT32(2);
    bool on_lock_timeout = PG_GETARG_BOOL(3);
    int level = isolation_level(isolation_arg);
    std::string sql = sql_arg;
    if (sql.find_first_not_of(" \t\r\n;") == std::string::npos)
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE, "sql must contain a statement");
    if (max_attempts < 1)
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE,
                        ck::fmt("max_attempts must be at least 1, got %d", max_attempts));

    ck::pg_call([] {
        if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
            elog(ERROR, "SPI_connect failed");
    });
    MemoryContext cxt = CurrentMemoryContext;   // SPI's procedure context: outlives transactions
    ResourceOwner owner = CurrentResourceOwner;
    counters.calls++;
    // The CALL's own transaction has a snapshot already: start from a fresh one.
    ck::pg_call([] { SPI_commit(); });

    int32 n = 0;
    for (;;) {
        n++;
        current_attempt = n;
        counters.attempts++;
        try {
            attempt(sql.c_str(), level);
            break;
        } catch (const ck::PgError &e) {
            ErrorData *edata = e.data();
            if (cancelled_by_citus_detector(edata))
                ck::pg_call([&] {
                    edata->sqlerrcode = ERRCODE_T_R_DEADLOCK_DETECTED;
                    edata->message = pstrdup("deadlock detected across Citus nodes");
                    edata->detail = pstrdup("Citus's distributed deadlock detector cancelled this transaction.");
                });
            roll_back(cxt, owner);
            current_attempt = 0;
            if (!retryable(edata->sqlerrcode, on_lock_timeout))
                throw;
            if (n >= max_attempts) {
                counters.exhausted++;
                ck::pg_call([&] {
                    edata->detail = psprintf("%s%sck.retry gave up after %d attempt%s.",
                                             edata->detail ? edata->detail : "", edata->detail ? "\n" : "", n,
                                             n == 1 ? "" : "s");
                });
                throw;
            }
        }
        counters.retries++;
        // Citus's detector can cancel this backend once more for the attempt just rolled back (its wait
        // graph lags behind the workers' aborts): that cancel, landing in the pause, is spent; the caller's
        // own cancel (no detector's mark) still ends the call.
        try {
            sleep_before_attempt(n + 1);
        } catch (const ck::PgError &e) {
            if (!cancelled_by_citus_detector(e.data()))
                throw;
            roll_back(cxt, owner);
        }
    }
    current_attempt = 0;
    ck::pg_call([] { SPI_finish(); });

    // The INOUT attempts parameter.
    Datum values[1] = {Int32GetDatum(n)};
    return result_row(fcinfo, values);
}

CK_FUNCTION(ck_current_attempt)
{
    PG_RETURN_INT32(current_attempt);
}

CK_FUNCTION(ck_retry_stats)
{
    Datum values[4] = {Int64GetDatum(counters.calls), Int64GetDatum(counters.attempts),
                       Int64GetDatum(counters.retries), Int64GetDatum(counters.exhausted)};
    return result_row(fcinfo, values);
}
