// ck.claim, ck.claim_wait and ck.complete_and_claim: their arguments, then the claim
// (engine/claim.hpp) or, on a distributed queue, its shards' own calls.
#include "base/args.hpp"
#include "queue/engine/claim.hpp"
#include "queue/rules/dependencies.hpp"
#include "queue/rules/limits.hpp"
#include "queue/signal/activity.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/sql/entry.hpp"
#include "queue/store/statements.hpp"

extern "C" {
#include "access/xact.h"
}

CK_FUNCTION(ck_claim)
{
    ck::require_arg(fcinfo, 0, "queue");
    Oid queue = PG_GETARG_OID(0);
    ck::Route route{ck::Route::Kind::Claim};
    route.batch = ck::batch_arg(fcinfo, 1);
    route.lease = ck::lease_arg(fcinfo, 2);
    route.out = ck::pg_call([&] { return ck::begin_result_set(fcinfo); });
    return ck::on_queue(fcinfo, queue, route, [&] {
        // Coming back empty (or every 64th time), it resolves a batch of finished dependencies
        // after claiming (rules/dependencies.hpp).
        ck::resolve_after_claim(queue, ck::claim_once(queue, route.batch, route.lease, ck::Snap::Caller, route.out));
        return (Datum) 0;
    });
}

// Waits up to max_wait for jobs. With the shared state (shared_memory.hpp), it sleeps on its queue's
// condition variable, which commits that make jobs ready broadcast on (prepared before each
// look, so no commit is missed); without, it looks again after 10 ms, doubling to 200 ms.
// Either way it also wakes when the next scheduled job or lease end comes due (engine/wait.hpp).
CK_FUNCTION(ck_claim_wait)
{
    ck::require_arg(fcinfo, 0, "queue");
    ck::require_arg(fcinfo, 3, "max_wait");
    Oid queue = PG_GETARG_OID(0);
    ck::Route route{ck::Route::Kind::ClaimWait};
    route.batch = ck::batch_arg(fcinfo, 1);
    route.lease = ck::lease_arg(fcinfo, 2);
    TimestampTz deadline = ck::wait_deadline(fcinfo, 3);
    if (IsolationUsesXactSnapshot())
        throw ck::Error(ERRCODE_ACTIVE_SQL_TRANSACTION, "ck.claim_wait needs READ COMMITTED",
                        "Under REPEATABLE READ or SERIALIZABLE one snapshot would never see new jobs.");
    route.deadline = deadline;
    route.out = ck::pg_call([&] { return ck::begin_result_set(fcinfo); });
    return ck::on_queue(fcinfo, queue, route, [&] {
        ck::claim_wait(queue, route.batch, route.lease, route.deadline, route.out);
        return (Datum) 0;
    });
}

// ck.complete_and_claim(queue, id, lease_token, batch, lease): a worker's loop in one call.
// A lost lease raises CK005 (there is no try_ form), so whatever the worker wrote for the job
// in this transaction rolls back with it, and nothing is claimed. The completed job's
// concurrency slot is handed on after the claim: the claim may wait for a job row (PostgreSQL's
// SKIP LOCKED still waits for a row version it follows up an update chain), and a worker
// completing that job holds it while it waits for the slot row (a 40P01 deadlock in make chaos).
CK_FUNCTION(ck_complete_and_claim)
{
    ck::Ack a = ck::ack_args(fcinfo);
    ck::Route route{ck::Route::Kind::CompleteAndClaim};
    route.batch = ck::batch_arg(fcinfo, 3);
    route.lease = ck::lease_arg(fcinfo, 4);
    route.out = ck::pg_call([&] { return ck::begin_result_set(fcinfo); });
    return ck::on_queue(fcinfo, a.queue, route, [&] {
        ck::Completion c = ck::completion_args(fcinfo, a, 5);   // the 1.1.0 overload's sixth argument
        ck::DeferredDepartures departures;
        const ck::QueuePlan &complete = ck::queue_statement(ck::QueueStatement::Complete, a.queue);
        if (ck::queue_execute(complete, a.queue, c.values, c.nulls) == 0) {
            ck::count_now(a.queue, ck::Activity::LostAcks);
            throw ck::lease_lost(complete, a.id, a.token, nullptr);
        }
        ck::ready_again_on_abort(a.queue, a.id, 1);
        ck::count_at_commit(a.queue, ck::Activity::Completed, 1, &a.id);
        ck::resolve_after_claim(a.queue, ck::claim_once(a.queue, route.batch, route.lease, ck::Snap::Caller, route.out));
        departures.hand_over();
        ck::resolve_deferred(a.queue);
        return (Datum) 0;
    });
}
