// Every trigger function of a queue, in one place. ck.create_queue puts them on the queue:
// AFTER INSERT (ck_internal.queue_ready), AFTER DELETE (queue_left), AFTER DELETE FOR EACH ROW
// of a job with dependants (queue_dependency_left), BEFORE UPDATE OR DELETE (queue_changed); and
// ck.queues has queues_changed. Each reads its arguments and hands the work to its floor.
#include "base/boundary.hpp"
#include "base/spi.hpp"
#include "queue/rules/dependencies.hpp"
#include "queue/rules/limits.hpp"
#include "queue/signal/activity.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/signal/wakeup.hpp"
#include "queue/store/place.hpp"

extern "C" {
#include "access/htup_details.h"
#include "commands/trigger.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace {

// The trigger's data; raises unless the function was called as a trigger. (Inside pg_call.)
TriggerData *trigger_data(FunctionCallInfo fcinfo, const char *name)
{
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("ck_internal.%s must be called as a trigger", name)));
    return (TriggerData *) fcinfo->context;
}

// What every trigger here returns: no tuple (an AFTER trigger's, a statement trigger's result is
// ignored); typed, since 19's PointerGetDatum rejects nullptr_t.
Datum no_tuple()
{
    return PointerGetDatum(static_cast<HeapTuple>(nullptr));
}

} // namespace

// BEFORE UPDATE OR DELETE FOR EACH STATEMENT on every queue: a statement that is not one of
// the extension's own (those record where their rows go) may move jobs below the frontier,
// or lock rows that claims then pass, so the frontier starts over when its transaction ends.
CK_FUNCTION(ck_queue_changed)
{
    ck::pg_call([&] {
        TriggerData *trigger = trigger_data(fcinfo, "queue_changed");
        if (ck::plans_executing() == 0)
            ck::frontier_reset_at_end(RelationGetRelid(trigger->tg_relation));
    });
    return no_tuple();
}

// AFTER INSERT FOR EACH STATEMENT on every queue (REFERENCING NEW TABLE): the inserted jobs'
// waiters wake at commit, the claim frontier learns where the jobs are, and jobs of a limited
// concurrency key take a slot or are parked (rules/limits.cpp).
CK_FUNCTION(ck_queue_ready)
{
    struct Inserted {
        Oid queue;
        ck::KeyedJobs keyed;
    };
    Inserted inserted = ck::pg_call([&] {
        TriggerData *trigger = trigger_data(fcinfo, "queue_ready");
        Oid queue = RelationGetRelid(trigger->tg_relation);
        ck::queue_mark_ready(queue);
        ck::frontier_on_insert(trigger);
        if (trigger->tg_newtable != nullptr)
            ck::count_at_commit(queue, ck::Activity::Enqueued, tuplestore_tuple_count(trigger->tg_newtable));
        // ck.enqueue settled its job's slot before inserting it: no second pass over the rows.
        if (ck::inserts_placed())
            return Inserted{queue, ck::KeyedJobs{}};
        return Inserted{queue, ck::keyed_jobs(trigger->tg_newtable, RelationGetDescr(trigger->tg_relation), true)};
    });
    if (inserted.keyed.n > 0)
        ck::limits_on_insert(inserted.queue, inserted.keyed);
    return no_tuple();
}

// AFTER DELETE FOR EACH STATEMENT on every queue (REFERENCING OLD TABLE): each job of a limited
// key that left the queue, unless it was parked, hands its slot to the oldest parked job of its
// key (ready from now, or at its own run_at if later, once this commits), or frees it. After a
// limit was lowered below the jobs already running (free < 0) a departure only gives its slot
// back. With a DeferredDepartures in scope the keys are only noted, for its hand_over().
CK_FUNCTION(ck_queue_left)
{
    struct Left {
        Oid queue;
        ck::KeyedJobs jobs;
    };
    Left left = ck::pg_call([&] {
        TriggerData *trigger = trigger_data(fcinfo, "queue_left");
        Relation rel = trigger->tg_relation;
        return Left{RelationGetRelid(rel), ck::keyed_jobs(trigger->tg_oldtable, RelationGetDescr(rel), false)};
    });
    ck::limits_on_delete(left.queue, left.jobs);
    return no_tuple();
}

// AFTER DELETE FOR EACH ROW WHEN (OLD.has_dependants) on every queue: the job left; its
// departure is recorded (completed, or why not) and, unless a resolution is already running in
// this backend (which picks it up), a batch is resolved now.
CK_FUNCTION(ck_queue_dependency_left)
{
    struct Left {
        Oid queue;
        Datum id;
    };
    Left left = ck::pg_call([&] {
        TriggerData *trigger = trigger_data(fcinfo, "queue_dependency_left");
        if (!TRIGGER_FIRED_FOR_ROW(trigger->tg_event) || !TRIGGER_FIRED_BY_DELETE(trigger->tg_event))
            ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                            errmsg("ck_internal.queue_dependency_left must be an AFTER DELETE FOR EACH ROW trigger")));
        Relation rel = trigger->tg_relation;
        AttrNumber id = ck::job_column(RelationGetDescr(rel), "id", INT8OID);
        bool isnull = true;
        Datum value = id == InvalidAttrNumber ? 0 : heap_getattr(trigger->tg_trigtuple, id, RelationGetDescr(rel), &isnull);
        if (isnull)
            elog(ERROR, "queue \"%s\" has no job id", RelationGetRelationName(rel));
        return Left{RelationGetRelid(rel), value};
    });
    ck::spi_connect();
    ck::dependency_left(left.queue, left.id);
    ck::spi_finish();
    return no_tuple();
}

// AFTER UPDATE OR DELETE on ck.queues: plans built from the old settings are dropped, and so
// is the claim frontier.
CK_FUNCTION(ck_queues_changed)
{
    ck::pg_call([&] {
        TriggerData *trigger = trigger_data(fcinfo, "queues_changed");
        bool isnull;
        Datum queue = heap_getattr(trigger->tg_trigtuple, 1, trigger->tg_relation->rd_att, &isnull);
        Oid relid = DatumGetObjectId(queue);
        if (!isnull && get_rel_relkind(relid) != '\0')
            CacheInvalidateRelcacheByRelid(relid);
        if (!isnull)
            ck::frontier_reset_at_end(relid);   // e.g. a higher max_attempts makes skipped jobs claimable
    });
    return no_tuple();
}
