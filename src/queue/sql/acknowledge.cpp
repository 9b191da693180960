// The acknowledgements: ck.complete, ck.complete_many, ck.extend_lease and ck.fail (each with
// its try_ form), ck.retry_dead and ck.purge_dead. Every acknowledgement checks the lease token
// in its WHERE, so a worker whose lease expired and was re-claimed changes nothing.
#include "base/args.hpp"
#include "queue/rules/backoff.hpp"
#include "queue/rules/dependencies.hpp"
#include "queue/signal/activity.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/signal/wakeup.hpp"
#include "queue/sql/entry.hpp"
#include "queue/store/place.hpp"
#include "queue/store/statements.hpp"

extern "C" {
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

namespace {

using ck::Activity;
using ck::finite_interval_arg;
using ck::job_place;
using ck::JobPlace;
using ck::lease_arg;
using ck::lease_lost;
using ck::ready_again_on_abort;
using ck::require_arg;

} // namespace

// ck.complete raises CK005 when the lease was lost, ck.try_complete returns false. The 1.1.0
// overloads take a result (jsonb) as a fourth argument, kept in the queue's history if it has one.
static Datum complete(FunctionCallInfo fcinfo, bool raise)
{
    ck::Ack a = ck::ack_args(fcinfo);
    ck::Completion c = ck::completion_args(fcinfo, a, 3);
    return ck::on_queue(fcinfo, a.queue, ck::Route{ck::Route::Kind::ById}, [&]() -> Datum {
        const ck::QueuePlan &p = ck::queue_statement(ck::QueueStatement::Complete, a.queue);
        bool done = ck::queue_execute(p, a.queue, c.values, c.nulls) == 1;
        if (done) {
            ready_again_on_abort(a.queue, a.id, 1);
            ck::count_at_commit(a.queue, Activity::Completed, 1, &a.id);
        } else {
            ck::count_now(a.queue, Activity::LostAcks);
            if (raise)
                throw lease_lost(p, a.id, a.token, "ck.try_complete returns false");
        }
        PG_RETURN_BOOL(done);
    });
}

CK_FUNCTION(ck_complete)
{
    return complete(fcinfo, true);
}

CK_FUNCTION(ck_try_complete)
{
    return complete(fcinfo, false);
}

// The length of a bigint[] argument of complete_many, which must be one-dimensional (or
// empty), without NULLs, and no longer than a claim's largest batch.
static int array_length_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
    require_arg(fcinfo, argno, what);
    struct Shape {
        int ndim;
        int length;
        bool has_nulls;
    };
    Shape shape = ck::pg_call([&] {
        ArrayType *a = PG_GETARG_ARRAYTYPE_P(argno);
        return Shape{ARR_NDIM(a), ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)), array_contains_nulls(a)};
    });
    if (shape.ndim > 1)
        throw ck::Error(ERRCODE_ARRAY_SUBSCRIPT_ERROR, ck::fmt("%s must be a one-dimensional array", what));
    if (shape.has_nulls)
        throw ck::Error(ERRCODE_NULL_VALUE_NOT_ALLOWED, ck::fmt("%s must not contain NULL", what));
    if (shape.length > ck::max_claim_batch)
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE,
                        ck::fmt("%s has %d elements, more than %d", what, shape.length, ck::max_claim_batch),
                        "", "Complete the jobs of one claim at a time.");
    return shape.length;
}

// The first pair of complete_many's arrays whose id the statement did not complete (the rows of
// the last execution): the lease lost that ck.complete_many reports.
static void first_lost_pair(FunctionCallInfo fcinfo, Datum *id, Datum *token)
{
    ck::pg_call([&] {
        Datum *ids;
        Datum *tokens;
        int n;
        int m;
        deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE, &ids, nullptr, &n);
        deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE, &tokens, nullptr, &m);
        // A pair whose id came back once is done; its id repeated in a later pair is not.
        bool *taken = static_cast<bool *>(palloc0(sizeof(bool) * (SPI_processed + 1)));
        for (int i = 0; i < n; i++) {
            uint64 r = 0;
            for (; r < SPI_processed; r++) {
                bool isnull;
                if (!taken[r] && SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull) == ids[i])
                    break;
            }
            if (r == SPI_processed) {
                *id = ids[i];
                *token = tokens[i];
                return;
            }
            taken[r] = true;
        }
    });
}

// The results argument of complete_many's 1.1.0 overloads: NULL (none), or one per pair (each
// may be NULL). Returns whether there is one.
static bool results_arg(FunctionCallInfo fcinfo, int ids)
{
    if (PG_NARGS() < 4 || PG_ARGISNULL(3))
        return false;
    struct Shape {
        int ndim;
        int length;
    };
    Shape shape = ck::pg_call([&] {
        ArrayType *a = PG_GETARG_ARRAYTYPE_P(3);
        return Shape{ARR_NDIM(a), ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a))};
    });
    if (shape.ndim > 1 || shape.length != ids)
        throw ck::Error(ERRCODE_ARRAY_SUBSCRIPT_ERROR,
                        ck::fmt("ids has %d elements but results has %d", ids, shape.length),
                        "", "Pass one result per job (NULL for none), in the order of ids.");
    return true;
}

// ck.complete_many(queue, ids, lease_tokens) completes every pair or raises CK005 (nothing
// completed: the transaction rolls back); ck.try_complete_many returns the ids whose pair still
// held the lease and leaves the others alone.
static Datum complete_many(FunctionCallInfo fcinfo, bool raise)
{
    require_arg(fcinfo, 0, "queue");
    int ids = array_length_arg(fcinfo, 1, "ids");
    int tokens = array_length_arg(fcinfo, 2, "lease_tokens");
    if (ids != tokens)
        throw ck::Error(ERRCODE_ARRAY_SUBSCRIPT_ERROR,
                        ck::fmt("ids has %d elements but lease_tokens has %d", ids, tokens),
                        "", "Pass each job's id and the lease token its claim returned, in the same order.");
    bool results = results_arg(fcinfo, ids);
    Datum values[3] = {PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), results ? PG_GETARG_DATUM(3) : (Datum) 0};
    char nulls[3] = {' ', ' ', results ? ' ' : 'n'};
    Oid queue = PG_GETARG_OID(0);
    return ck::on_queue(fcinfo, queue, ck::Route{ck::Route::Kind::CompleteMany}, [&]() -> Datum {
        const ck::QueuePlan &p = ck::queue_statement(ck::QueueStatement::CompleteMany, queue);
        uint64 done = ck::queue_execute(p, queue, values, nulls);
        ck::count_now(queue, Activity::LostAcks, static_cast<uint64>(ids) - done);
        Datum *completed = ck::pg_call([&] {   // their ids: the commit wakes their awaiters
            Datum *done_ids = static_cast<Datum *>(palloc(sizeof(Datum) * (SPI_processed + 1)));
            for (uint64 i = 0; i < SPI_processed; i++) {
                JobPlace was = job_place(i, 2, 1);
                ck::frontier_on_abort(queue, was.priority, was.place);
                done_ids[i] = Int64GetDatum(was.place.id);
            }
            return done_ids;
        });
        if (raise && done < static_cast<uint64>(ids)) {
            Datum id = 0;
            Datum token = 0;
            first_lost_pair(fcinfo, &id, &token);
            throw lease_lost(p, id, token, "ck.try_complete_many returns the ids still held");
        }
        ck::count_at_commit(queue, Activity::Completed, done, completed);
        Datum result = ck::return_result_rows(fcinfo, 1);
        return result;
    });
}

CK_FUNCTION(ck_complete_many)
{
    return complete_many(fcinfo, true);
}

CK_FUNCTION(ck_try_complete_many)
{
    return complete_many(fcinfo, false);
}

// ck.extend_lease raises CK005 when the lease was lost, ck.try_extend_lease returns NULL.
static Datum extend_lease(FunctionCallInfo fcinfo, bool raise)
{
    ck::Ack a = ck::ack_args(fcinfo);
    require_arg(fcinfo, 3, "lease");
    Interval *lease = lease_arg(fcinfo, 3);
    Datum values[4] = {a.id, a.token, IntervalPGetDatum(lease), TimestampTzGetDatum(GetCurrentTimestamp())};
    return ck::on_queue(fcinfo, a.queue, ck::Route{ck::Route::Kind::ById}, [&]() -> Datum {
        const ck::QueuePlan &p = ck::queue_statement(ck::QueueStatement::ExtendLease, a.queue);
        if (ck::queue_execute(p, a.queue, values) == 0) {
            ck::count_now(a.queue, Activity::LostAcks);
            if (raise)
                throw lease_lost(p, a.id, a.token, "ck.try_extend_lease returns NULL");
            PG_RETURN_NULL();
        }
        ready_again_on_abort(a.queue, a.id, 2);
        bool isnull;
        Datum until = ck::result_datum(0, 1, &isnull);
        return until;   // timestamptz is pass-by-value
    });
}

CK_FUNCTION(ck_extend_lease)
{
    return extend_lease(fcinfo, true);
}

CK_FUNCTION(ck_try_extend_lease)
{
    return extend_lease(fcinfo, false);
}

// ck.fail raises CK005 when the lease was lost, ck.try_fail returns NULL; else both say what
// became of the job: retry or dead.
static Datum fail(FunctionCallInfo fcinfo, bool raise)
{
    ck::Ack a = ck::ack_args(fcinfo);
    Datum error = PG_ARGISNULL(3) ? (Datum) 0 : PG_GETARG_DATUM(3);
    Interval *retry_in = finite_interval_arg(fcinfo, 4, "retry_in", true,
                                             "A retry that never comes leaves the job in the queue for good, "
                                             "neither run nor dead: pick a finite delay, or ck.complete the job.");
    char error_null = PG_ARGISNULL(3) ? 'n' : ' ';

    return ck::on_queue(fcinfo, a.queue, ck::Route{ck::Route::Kind::ById}, [&]() -> Datum {
        // Lock the job while it is still ours, then decide: the lock keeps the decision valid.
        const ck::QueuePlan &lock = ck::queue_statement(ck::QueueStatement::FailLock, a.queue);
        Datum key[2] = {a.id, a.token};
        if (ck::queue_execute(lock, a.queue, key) == 0) {
            ck::count_now(a.queue, Activity::LostAcks);
            if (raise)
                throw lease_lost(lock, a.id, a.token, "ck.try_fail returns NULL");
            PG_RETURN_NULL();
        }
        ck::count_at_commit(a.queue, Activity::Failed);
        ready_again_on_abort(a.queue, a.id, 2);
        bool isnull;
        int32 attempts = DatumGetInt32(ck::result_datum(0, 1, &isnull));
        const char *outcome;
        if (attempts >= lock.max_attempts) {
            const ck::QueuePlan &dead = ck::queue_statement(ck::QueueStatement::FailDead, a.queue);
            Datum values[2] = {a.id, error};
            char nulls[2] = {' ', error_null};
            ck::DeadDepartures departing(error_null == 'n' ? "failed" : ck::pg_call([&] { return TextDatumGetCString(error); }));
            ck::queue_execute(dead, a.queue, values, nulls);
            ck::count_at_commit(a.queue, Activity::Buried, 1, &a.id);
            outcome = "dead";
        } else {
            Interval delay = retry_in ? *retry_in : ck::retry_backoff(attempts);
            const ck::QueuePlan &retry = ck::queue_statement(ck::QueueStatement::FailRetry, a.queue);
            Datum values[4] = {a.id, IntervalPGetDatum(&delay), error, TimestampTzGetDatum(GetCurrentTimestamp())};
            char nulls[4] = {' ', ' ', error_null, ' '};
            ck::queue_execute(retry, a.queue, values, nulls);
            ck::pg_call([&] {
                ck::queue_mark_ready(a.queue);   // its waiters learn the retry time
                JobPlace at = job_place(0, 1, 0, a.id);
                ck::frontier_on_commit(a.queue, at.priority, at.place);
            });
            ck::count_at_commit(a.queue, Activity::Retried);
            outcome = "retry";
        }
        PG_RETURN_TEXT_P(cstring_to_text(outcome));
    });
}

CK_FUNCTION(ck_fail)
{
    return fail(fcinfo, true);
}

CK_FUNCTION(ck_try_fail)
{
    return fail(fcinfo, false);
}

CK_FUNCTION(ck_retry_dead)
{
    require_arg(fcinfo, 0, "queue");
    require_arg(fcinfo, 1, "id");
    Oid queue = PG_GETARG_OID(0);
    Datum values[1] = {PG_GETARG_DATUM(1)};
    return ck::on_queue(fcinfo, queue, ck::Route{ck::Route::Kind::ById}, [&]() -> Datum {
        const ck::QueuePlan &p = ck::queue_statement(ck::QueueStatement::RetryDead, queue);
        bool revived = ck::queue_execute(p, queue, values) == 1;
        PG_RETURN_BOOL(revived);
    });
}

CK_FUNCTION(ck_purge_dead)
{
    require_arg(fcinfo, 0, "queue");
    require_arg(fcinfo, 1, "older_than");
    Oid queue = PG_GETARG_OID(0);
    // Nothing died 'infinity' ago: that purge would delete nothing, surely not what was meant.
    Interval *older_than = finite_interval_arg(fcinfo, 1, "older_than", true, "older_than => '0' purges every dead letter.");
    Datum values[1] = {IntervalPGetDatum(older_than)};
    return ck::on_queue(fcinfo, queue, ck::Route{ck::Route::Kind::EveryShardCount}, [&]() -> Datum {
        const ck::QueuePlan &p = ck::queue_statement(ck::QueueStatement::PurgeDead, queue);
        uint64 n = ck::queue_execute(p, queue, values);
        PG_RETURN_INT64(static_cast<int64>(n));
    });
}
