// ck.job and ck.await_job: where a job is, and waiting until it has finished. A job is looked
// for in the queue and its history (one statement), then among the dead letters (when the
// caller may read them), then the identity sequence says whether its id was ever given.
// ck.await_job looks again each time a commit that finished its job (or a job sharing its slot)
// wakes it (signal/wakeup.hpp): it counts itself among the job's awaiters before each look, so
// such a commit either comes before the look (which sees it) or wakes it.
#include "base/args.hpp"
#include "queue/engine/wait.hpp"
#include "queue/signal/wakeup.hpp"
#include "queue/sql/entry.hpp"
#include "queue/store/statements.hpp"

extern "C" {
#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include <cstring>

namespace {

// Leaves the job's row (state, attempts, error, result, enqueued_at, finished_at) as the one
// row of SPI_tuptable.
void find_job(Oid queue, Datum id, ck::Snap snap)
{
    Datum values[2] = {id, TimestampTzGetDatum(GetCurrentTimestamp())};
    const ck::QueuePlan &found = ck::queue_statement(ck::QueueStatement::JobFind, queue);
    if (ck::queue_execute(found, queue, values, nullptr, snap) == 1)
        return;
    const ck::QueuePlan &dead = ck::queue_statement(ck::QueueStatement::JobDead, queue);
    bool may_read = ck::pg_call([&] { return pg_class_aclcheck(dead.dead_letters, GetUserId(), ACL_SELECT) == ACLCHECK_OK; });
    if (may_read && ck::queue_execute(dead, queue, values, nullptr, snap) == 1)
        return;
    ck::queue_execute(ck::queue_statement(ck::QueueStatement::JobGiven, queue), queue, values, nullptr, snap);
}

// Whether the state found is final: the job has left the queue.
bool finished()
{
    return ck::pg_call([&] {
        bool isnull;
        char *state = TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
        return strcmp(state, "waiting") != 0 && strcmp(state, "running") != 0;
    });
}

// The awaiter's count in its queue's slot goes when the call ends, by an error too.
struct Awaiting {
    ~Awaiting() { ck::queue_await_end(); }
};

} // namespace

CK_FUNCTION(ck_job)
{
    ck::require_arg(fcinfo, 0, "queue");
    ck::require_arg(fcinfo, 1, "id");
    Oid queue = PG_GETARG_OID(0);
    // A distributed queue: the shard the id names answers (without a history there).
    return ck::on_queue(fcinfo, queue, ck::Route{ck::Route::Kind::ById}, [&]() -> Datum {
        find_job(queue, PG_GETARG_DATUM(1), ck::Snap::ReadOnly);
        return ck::pg_call([&] {
            TupleDesc desc;
            if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
                elog(ERROR, "return type must be a row type");
            return PointerGetDatum(SPI_returntuple(SPI_tuptable->vals[0], BlessTupleDesc(desc)));
        });
    });
}

CK_FUNCTION(ck_await_job)
{
    ck::require_arg(fcinfo, 0, "queue");
    ck::require_arg(fcinfo, 1, "id");
    ck::require_arg(fcinfo, 2, "max_wait");
    Oid queue = PG_GETARG_OID(0);
    Datum id = PG_GETARG_DATUM(1);
    TimestampTz deadline = ck::wait_deadline(fcinfo, 2);
    if (IsolationUsesXactSnapshot())
        throw ck::Error(ERRCODE_ACTIVE_SQL_TRANSACTION, "ck.await_job needs READ COMMITTED",
                        "Under REPEATABLE READ or SERIALIZABLE one snapshot would never see the job finish.");
    ck::spi_connect();
    if (ck::queue_distribution(queue) != nullptr)
        throw ck::Error(ERRCODE_FEATURE_NOT_SUPPORTED, "ck.await_job does not wait on a distributed queue",
                        "Its jobs finish on the workers, whose commits do not wake this node.",
                        "Poll ck.job(queue, id), which a distributed queue answers.");
    Datum result;
    {
        Awaiting awaiting;
        // Counted and prepared to sleep before each look: a commit after it wakes us. No plan is
        // held across a nap (sweep); nothing comes due by itself.
        ck::wait_for_jobs(queue, ck::WakeOn::Finished, deadline, true,
                          [&] {
                              find_job(queue, id, ck::Snap::Fresh);
                              return finished();
                          },
                          [](TimestampTz) { return DT_NOEND; }, DatumGetInt64(id));
        result = ck::pg_call([&] {
            TupleDesc desc;
            if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
                elog(ERROR, "return type must be a row type");
            Datum values[3];
            bool nulls[3];
            const int columns[3] = {1, 4, 3};   // state, result, error
            for (int i = 0; i < 3; i++)
                values[i] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, columns[i], &nulls[i]);
            desc = BlessTupleDesc(desc);
            return PointerGetDatum(SPI_returntuple(heap_form_tuple(desc, values, nulls), desc));
        });
    }
    ck::spi_finish();
    return result;
}
