// ck.retry_dead_matching and ck.purge_dead_matching: ck.retry_dead and ck.purge_dead for the dead
// letters that match a filter (reason, its pattern, age, attempts, payload containment), one
// bounded batch per call, oldest first. Rows another transaction holds (a concurrent call, a
// ck.retry_dead) are skipped, never waited for: no call locks more than its batch, and two
// calls racing never take one dead letter twice. On a distributed queue each shard runs the call
// with the same filter and batch (batch is per shard), and the counts are summed.
#include "base/args.hpp"
#include "queue/sql/entry.hpp"
#include "queue/store/statements.hpp"

namespace {

// The filter's six parameters ($1 to $6 of the statement), read and checked; the batch is 1 to
// the claim's largest (a dead letter redriven is a job enqueued).
struct Filter {
    Datum values[6];
    char nulls[7] = "      ";
};

Filter filter_args(FunctionCallInfo fcinfo)
{
    ck::require_arg(fcinfo, 0, "queue");
    Filter f;
    for (int i = 0; i < 5; i++) {
        f.values[i] = PG_ARGISNULL(i + 1) ? (Datum) 0 : PG_GETARG_DATUM(i + 1);
        f.nulls[i] = PG_ARGISNULL(i + 1) ? 'n' : ' ';
    }
    // Nothing died 'infinity' ago (as in ck.purge_dead).
    ck::finite_interval_arg(fcinfo, 3, "older_than", true, "older_than => NULL or '0' takes every age.");
    if (!PG_ARGISNULL(4) && PG_GETARG_INT32(4) < 0)
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE,
                        ck::fmt("min_attempts must be zero or positive, got %d", PG_GETARG_INT32(4)));
    f.values[5] = Int32GetDatum(ck::batch_arg(fcinfo, 6));
    return f;
}

Datum run_matching(FunctionCallInfo fcinfo, ck::QueueStatement kind)
{
    Filter f = filter_args(fcinfo);
    Oid queue = PG_GETARG_OID(0);
    return ck::on_queue(fcinfo, queue, ck::Route{ck::Route::Kind::EveryShardCount}, [&]() -> Datum {
        const ck::QueuePlan &p = ck::queue_statement(kind, queue);
        uint64 n = ck::queue_execute(p, queue, f.values, f.nulls);
        PG_RETURN_INT64(static_cast<int64>(n));
    });
}

} // namespace

// Jobs go back ready now with their attempts reset, keeping their ids, as with ck.retry_dead; one
// whose unique key another job of the queue holds stays dead (ck.retry_dead raises 23505 there).
CK_FUNCTION(ck_retry_dead_matching)
{
    return run_matching(fcinfo, ck::QueueStatement::RetryDeadMatching);
}

CK_FUNCTION(ck_purge_dead_matching)
{
    return run_matching(fcinfo, ck::QueueStatement::PurgeDeadMatching);
}
