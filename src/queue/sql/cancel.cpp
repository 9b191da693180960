// ck.cancel(queue, id): the job leaves the queue for its dead letters (reason 'cancelled'),
// waiting or running alike. A running job's holder learns it at its next acknowledgement,
// which finds no row with its token: every acknowledgement raises CK005 (the try_ forms return
// false or NULL), and nothing is acknowledged.
// A claim still in progress on the job holds its row: the cancel waits for it (bounded by
// lock_timeout and statement_timeout, like any row lock) and then cancels what it leased.
#include "base/args.hpp"
#include "queue/rules/dependencies.hpp"
#include "queue/signal/activity.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/sql/entry.hpp"
#include "queue/store/statements.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

CK_FUNCTION(ck_cancel)
{
    ck::require_arg(fcinfo, 0, "queue");
    ck::require_arg(fcinfo, 1, "id");
    Oid queue = PG_GETARG_OID(0);
    Datum values[2] = {PG_GETARG_DATUM(1), TimestampTzGetDatum(GetCurrentTimestamp())};
    return ck::on_queue(fcinfo, queue, ck::Route{ck::Route::Kind::ById}, [&]() -> Datum {
        const ck::QueuePlan &p = ck::queue_statement(ck::QueueStatement::Cancel, queue);
        const char *outcome = "gone";
        uint64 n;
        {
            ck::DeadDepartures departing("cancelled");
            n = ck::queue_execute(p, queue, values);
        }
        if (n == 1) {
            // If this transaction rolls back, the job is back where it was.
            ck::ready_again_on_abort(queue, values[0], 2);
            ck::count_at_commit(queue, ck::Activity::Cancelled, 1, &values[0]);
            bool isnull;
            outcome = DatumGetBool(ck::result_datum(0, 1, &isnull)) ? "cancelling" : "cancelled";
        }
        PG_RETURN_TEXT_P(cstring_to_text(outcome));
    });
}
