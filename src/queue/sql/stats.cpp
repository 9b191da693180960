// ck.queue_stats: counts for dashboards, from index ranges that stay small (see the Stats
// statement in store/statements.cpp for what is exact and what is estimated); ck.claim_frontier and
// ck.claim_path.
#include "base/args.hpp"
#include "queue/store/statements.hpp"
#include "base/shared_memory.hpp"
#include "queue/signal/activity.hpp"
#include "queue/signal/wakeup.hpp"
#include "queue/sql/entry.hpp"
#include "queue/signal/frontier.hpp"
#include "base/spi.hpp"

extern "C" {
#include "access/relation.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
}

namespace {

// The queue's rows as the planner estimates them: the density of its last analysis times
// its blocks now (known only once it has been analysed).
int64 estimated_rows(Oid queue, bool *known)
{
    return ck::pg_call([&] {
        Relation rel = relation_open(queue, AccessShareLock);
        int64 rows = 0;
        *known = rel->rd_rel->relpages > 0 && rel->rd_rel->reltuples >= 0;
        if (*known)
            rows = static_cast<int64>(rel->rd_rel->reltuples / rel->rd_rel->relpages *
                                      RelationGetNumberOfBlocks(rel));
        relation_close(rel, AccessShareLock);
        return rows;
    });
}

// The queue argument of a function that reads its frontier: not NULL, readable by the caller.
Oid readable_queue(FunctionCallInfo fcinfo)
{
    ck::require_arg(fcinfo, 0, "queue");
    Oid queue = PG_GETARG_OID(0);
    ck::pg_call([&] {
        AclResult acl = pg_class_aclcheck(queue, GetUserId(), ACL_SELECT);
        if (acl != ACLCHECK_OK)
            aclcheck_error(acl, OBJECT_TABLE, get_rel_name(queue));
    });
    return queue;
}

} // namespace

CK_FUNCTION(ck_queue_stats)
{
    ck::require_arg(fcinfo, 0, "queue");
    Oid queue = PG_GETARG_OID(0);
    return ck::on_queue(fcinfo, queue, ck::Route{ck::Route::Kind::Stats}, [&] {
        const ck::QueuePlan &p = ck::queue_statement(ck::QueueStatement::Stats, queue);
        bool paused = p.paused;   // as of the transaction's start (read now: p may be dropped by the execution)
        bool known = false;
        Datum values[1] = {Int64GetDatum(estimated_rows(queue, &known))};
        uint64 rows = ck::queue_execute(p, queue, values, known ? nullptr : "n", ck::Snap::ReadOnly);
        return ck::pg_call([&] {
            if (rows != 1 || SPI_tuptable == nullptr)
                elog(ERROR, "the statistics of queue \"%s\" came back as " UINT64_FORMAT " rows", get_rel_name(queue), rows);
            TupleDesc desc;
            if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
                elog(ERROR, "return type must be a row type");
            // 1.1.0 added the last column, paused, which the statement does not read.
            if (desc->natts == SPI_tuptable->tupdesc->natts)
                return PointerGetDatum(SPI_returntuple(SPI_tuptable->vals[0], BlessTupleDesc(desc)));
            if (desc->natts != 8 || SPI_tuptable->tupdesc->natts != 7)
                elog(ERROR, "ck.queue_stats: %d result columns for %d counted", desc->natts, SPI_tuptable->tupdesc->natts);
            Datum values[8];
            bool nulls[8];
            heap_deform_tuple(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, values, nulls);
            values[7] = BoolGetDatum(paused);
            nulls[7] = false;
            TupleDesc blessed = BlessTupleDesc(desc);
            return PointerGetDatum(SPI_returntuple(heap_form_tuple(blessed, values, nulls), blessed));
        });
    });
}

// ck.claim_frontier(queue): where each known priority's claims start reading the claim index
// (run_at NULL: at its beginning; id NULL: at the first job of that run_at). No rows while the frontier is not known
// (ck.claim_path says why): nothing was claimed since the shared state appeared, it was reset, or
// the queue has more priorities than it keeps (see signal/frontier.cpp).
CK_FUNCTION(ck_claim_frontier)
{
    Oid queue = readable_queue(fcinfo);
    ck::spi_connect();
    (void) ck::queue_statement(ck::QueueStatement::Priorities, queue);   // raises unless a queue
    ck::spi_finish();
    ck::FrontierView view;
    bool known = ck::pg_call([&] { return ck::frontier_read(queue, &view); });
    ck::pg_call([&] {
        ReturnSetInfo *rsinfo = ck::begin_result_set(fcinfo);
        for (int i = 0; known && i < view.npriorities; i++) {
            bool at_start = view.start[i].run_at == DT_NOBEGIN;
            bool any_id = view.start[i].id == PG_INT64_MIN;
            Datum values[3] = {Int32GetDatum(view.priority[i]), TimestampTzGetDatum(view.start[i].run_at),
                               Int64GetDatum(view.start[i].id)};
            bool nulls[3] = {false, at_start, any_id};
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        }
    });
    return (Datum) 0;
}

// ck.claim_path(queue): which way this session's next claim of queue goes, and why: 'frontier'
// (from each priority's frontier: the claim's cost follows the claimable jobs), 'discover' (the
// next claim finds the priorities, then goes from the frontier) or 'full' (the whole claim
// index, dead entries included); 'distributed' for a Citus queue (claimed on its workers).
CK_FUNCTION(ck_claim_path)
{
    Oid queue = readable_queue(fcinfo);
    ck::spi_connect();
    ck::ClaimPath path{"distributed", "a Citus queue: each claim runs on the workers that hold its shards"};
    if (ck::queue_distribution(queue) == nullptr) {
        (void) ck::queue_statement(ck::QueueStatement::Priorities, queue);   // raises unless a queue
        path = ck::pg_call([&] { return ck::frontier_path(queue); });
    }
    ck::spi_finish();
    return ck::pg_call([&] {
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "return type must be a row type");
        Datum values[2] = {CStringGetTextDatum(path.path), CStringGetTextDatum(path.reason)};
        bool nulls[2] = {false, false};
        return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
    });
}

// ck.claim_wait_mode(): 'commit' when waiters wake on commit, 'poll' otherwise.
CK_FUNCTION(ck_claim_wait_mode)
{
    return ck::pg_call([&] { return PointerGetDatum(cstring_to_text(ck::queue_wakeup_active() ? "commit" : "poll")); });
}

// ck.queue_activity(): the counters of this database's queues (those that still exist).
CK_FUNCTION(ck_queue_activity)
{
    ck::ActivityTotals totals;
    if (!ck::pg_call([&] { return ck::activity_totals(&totals); }))
        throw ck::Error(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                        "ck.queue_activity needs the shared state, which this server has no room for",
                        "The counters live in shared memory; the main segment had no spare bytes left for them.",
                        "Add concurrency_kit to shared_preload_libraries and restart the server.");
    ck::pg_call([&] {
        if (totals.uncounted > 0)
            ereport(WARNING, (errmsg("%llu queue events were not counted: more queues were used than "
                                     "concurrency_kit.activity_queues (%d) allows",
                                     static_cast<unsigned long long>(totals.uncounted), totals.size),
                              strcmp(ck::shared_memory_mode(), "preloaded") == 0
                                  ? errhint("Raise concurrency_kit.activity_queues and restart the server.")
                                  : errhint("Preload concurrency_kit (shared_preload_libraries), set "
                                            "concurrency_kit.activity_queues and restart the server.")));
        ReturnSetInfo *rsinfo = ck::begin_result_set(fcinfo);
        ck::ActivityRow *rows;
        int n = ck::activity_rows(&rows);
        constexpr int kinds = static_cast<int>(ck::Activity::Kinds);
        for (int i = 0; i < n; i++) {
            Datum values[kinds + 2];
            bool nulls[kinds + 2] = {};
            values[0] = ObjectIdGetDatum(rows[i].queue);
            for (int k = 0; k < kinds; k++)
                values[k + 1] = Int64GetDatum(static_cast<int64>(rows[i].count[k]));
            values[kinds + 1] = TimestampTzGetDatum(rows[i].since);
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        }
        pfree(rows);
    });
    return (Datum) 0;
}
