// Job timeouts (timeout.hpp). Why no column but timeout_at, and no sweeper: the claim sets an
// attempt's deadline (timeout_at) and caps its lease end (run_at) there, ck.extend_lease never
// carries run_at past it, so at the deadline the lease ends like any other; claims pass over such
// a job (its run_at is its timeout_at), and the burial that follows short claims fails it, here.
// Acknowledgements after the deadline find the lease lost (CK005): the attempt's effects roll back
// with them, so nothing an attempt does after its timeout is kept, whether or not it was failed yet.
#include "base/args.hpp"
#include "queue/engine/timeout.hpp"
#include "queue/rules/backoff.hpp"
#include "queue/rules/dependencies.hpp"
#include "queue/signal/activity.hpp"
#include "queue/signal/wakeup.hpp"
#include "queue/store/place.hpp"
#include "queue/store/statements.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

namespace ck {

Interval timed_lease(const QueuePlan &claim, const Interval &lease)
{
    Interval timeout = claim.timeout;
    bool shorter = pg_call([&] {
        return DatumGetInt32(DirectFunctionCall2(interval_cmp, IntervalPGetDatum(&timeout),
                                                 IntervalPGetDatum(const_cast<Interval *>(&lease)))) < 0;
    });
    return shorter ? timeout : lease;
}

TimestampTz timed_deadline(const QueuePlan &claim, TimestampTz moment)
{
    Interval timeout = claim.timeout;
    // A timeout that reaches past the last timestamp is none (rather than a claim failing 22008).
    if (static_cast<double>(moment) + interval_usecs(&timeout) >= static_cast<double>(END_TIMESTAMP))
        return DT_NOEND;
    return pg_call([&] {
        return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(moment),
                                                       IntervalPGetDatum(&timeout)));
    });
}

bool time_out(Oid queue, const FrontierView &view, TimestampTz moment, Snap snap, Snapshot snapshot)
{
    const QueuePlan &pick = queue_statement(QueueStatement::TimedOut, queue);
    Datum args[2] = {TimestampTzGetDatum(moment), TimestampTzGetDatum(view.bury_from)};
    uint64 n = queue_execute(pick, queue, args, nullptr, snap, snapshot);
    if (n == 0)
        return false;
    struct Timed {
        Datum id;
        int32 attempts;
        JobPlace was;
    };
    Timed *timed = pg_call([&] {
        check_place_columns(3, 1);
        Timed *rows = static_cast<Timed *>(palloc(sizeof(Timed) * n));
        for (uint64 i = 0; i < n; i++) {
            bool isnull;
            rows[i].id = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
            rows[i].attempts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
            rows[i].was = job_place(i, 3, 1);
            // If this transaction aborts the job is back, leased and timed out, for a later burial.
            frontier_on_abort(queue, rows[i].was.priority, rows[i].was.place);
        }
        SPI_freetuptable(SPI_tuptable);
        return rows;
    });
    Datum reason = pg_call([] { return PointerGetDatum(cstring_to_text("timeout")); });
    uint64 retried = 0;
    for (uint64 i = 0; i < n; i++) {
        if (timed[i].attempts >= pick.max_attempts) {
            const QueuePlan &dead = queue_statement(QueueStatement::FailDead, queue);
            Datum values[2] = {timed[i].id, reason};
            DeadDepartures departing("timeout");
            queue_execute(dead, queue, values);
            count_at_commit(queue, Activity::Buried, 1, &timed[i].id);
            continue;
        }
        Interval delay = retry_backoff(timed[i].attempts);
        const QueuePlan &retry = queue_statement(QueueStatement::FailRetry, queue);
        Datum values[4] = {timed[i].id, IntervalPGetDatum(&delay), reason, TimestampTzGetDatum(moment)};
        queue_execute(retry, queue, values);
        pg_call([&] {
            JobPlace at = job_place(0, 1, 0, timed[i].id);
            frontier_on_commit(queue, at.priority, at.place);
            SPI_freetuptable(SPI_tuptable);
        });
        retried++;
    }
    if (retried > 0)
        pg_call([&] { queue_mark_ready(queue); });   // its waiters learn the retry times
    count_at_commit(queue, Activity::Retried, retried);
    pg_call([&] { pfree(timed); });
    return n == static_cast<uint64>(bury_batch);
}

} // namespace ck
