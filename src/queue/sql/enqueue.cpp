// ck.enqueue and ck.enqueue_unique: their arguments, then the enqueue (engine/enqueue.hpp) or,
// on a distributed queue, the shard's own call.
#include "base/args.hpp"
#include "queue/engine/enqueue.hpp"
#include "queue/rules/dependencies.hpp"
#include "queue/sql/entry.hpp"

extern "C" {
#include "access/htup_details.h"
#include "funcapi.h"
}

CK_FUNCTION(ck_enqueue)
{
    ck::require_arg(fcinfo, 0, "queue");
    ck::require_arg(fcinfo, 1, "payload");
    ck::require_arg(fcinfo, 2, "run_at");
    ck::require_arg(fcinfo, 3, "priority");
    Oid queue = PG_GETARG_OID(0);
    ck::NewJob job{PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), PG_GETARG_DATUM(3)};
    // unique_key and unique_for came with 0.3.0: a library newer than the installed SQL gets
    // four arguments.
    const Interval *window = ck::unique_for_arg(fcinfo, 5, 4);
    job.no_unique_key = PG_NARGS() <= 4 || PG_ARGISNULL(4);
    job.unique_key = job.no_unique_key ? 0 : PG_GETARG_DATUM(4);
    job.no_concurrency_key = PG_NARGS() <= 6 || PG_ARGISNULL(6);
    job.concurrency_key = job.no_concurrency_key ? 0 : PG_GETARG_DATUM(6);
    // after came with 0.3.1.
    ck::Dependencies deps = ck::after_arg(fcinfo, 7);
    ck::Route route{ck::Route::Kind::Enqueue};
    route.key_argno = 4;
    route.concurrency_argno = 6;
    route.after_argno = 7;
    // bigint is pass-by-value
    return ck::on_queue(fcinfo, queue, route, [&] { return Int64GetDatum(ck::enqueue(queue, job, window, deps)); });
}

// ck.enqueue_unique(queue, unique_key, payload, run_at, priority, unique_for): the job's id and
// whether this call inserted it (false: a job with that key was already in the queue, or took
// the key's window).
CK_FUNCTION(ck_enqueue_unique)
{
    static const char *const arg_names[] = {"queue", "unique_key", "payload", "run_at", "priority"};
    for (int i = 0; i < 5; i++)
        ck::require_arg(fcinfo, i, arg_names[i]);
    const Interval *window = ck::unique_for_arg(fcinfo, 5, 1);
    ck::NewJob job{PG_GETARG_DATUM(2), PG_GETARG_DATUM(3), PG_GETARG_DATUM(4), PG_GETARG_DATUM(1), false};
    job.no_concurrency_key = PG_NARGS() <= 6 || PG_ARGISNULL(6);
    job.concurrency_key = job.no_concurrency_key ? 0 : PG_GETARG_DATUM(6);
    ck::Route route{ck::Route::Kind::Enqueue};
    route.key_argno = 1;
    route.concurrency_argno = 6;
    return ck::on_queue(fcinfo, PG_GETARG_OID(0), route, [&] {
        ck::Enqueued enqueued = ck::enqueue_unique(PG_GETARG_OID(0), job, window);
        return ck::pg_call([&] {
            TupleDesc desc;
            if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
                elog(ERROR, "ck.enqueue_unique must return a record");
            Datum values[2] = {Int64GetDatum(enqueued.id), BoolGetDatum(enqueued.inserted)};
            bool nulls[2] = {false, false};
            return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
        });
    });
}
