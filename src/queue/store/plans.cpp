// The claim, the burial, complete_many and the statements that find jobs by id run kept generic
// plans, made at the first call and again after each invalidation, such as an ANALYZE. Made
// from the statistics of the moment, two kinds of plan read the whole queue at every call
// until the next invalidation:
// - With sequential scans, bitmap scans and sorts allowed, an ANALYZE that saw the queue
//   nearly empty makes the claim sort the whole backlog (the sustained benchmark: 40 ms per
//   claim instead of 0.1). So they are off while the plan is made; jit too: a plan that needs
//   a disabled node costs above jit_above_cost and would be compiled at every execution.
// - The rows the statement changes are found by id (the claim's UPDATE joins the picked rows,
//   the burial's DELETE takes an array of ids, complete_many's joins the pairs). After an
//   ANALYZE that saw a bloated queue nearly empty, the planner estimates one row in the table,
//   and finding a row by id through the claim index (id is its last column: a walk of the
//   whole index) costs it the same as through the primary key; it took the claim index, and
//   the 10-minute REPEATABLE READ horizon run fell to a fifth of its rate. So while the plan
//   is made, the table the statement changes offers the planner only the indexes that start
//   with id (get_relation_info_hook; build_simple_rel_hook on 19); so does every scan of the
//   queue in a statement that reads jobs by id only (complete, fail, extend_lease, cancel,
//   parking): an ANALYZE that ran while a big insert was not yet committed (autovacuum does)
//   saw no rows, and each job a plain INSERT parked then walked the claim index (150 pages a
//   job, quadratic in the insert's size). (The joins are written so that a full scan of the primary key is of no use to
//   the planner either: see the claim's SQL in statements.cpp.)
// The plan is made apart from the execution (SPI_plan_get_cached_plan), so that neither the
// settings nor the restriction reach the statements that triggers run during it.
#include "base/guc_scope.hpp"
#include "base/spi.hpp"
#include "queue/store/plans.hpp"

extern "C" {
#include "optimizer/plancat.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#if PG_VERSION_NUM >= 190000
#include "optimizer/pathnode.h"
#endif
}

// PostgreSQL 19 replaced get_relation_info_hook with build_simple_rel_hook, which runs once
// get_relation_info has filled in the relation (its indexes) and is meant for such edits.
#if PG_VERSION_NUM >= 190000
using relation_hook_type = build_simple_rel_hook_type;
#define ck_relation_hook build_simple_rel_hook
#else
using relation_hook_type = get_relation_info_hook_type;
#define ck_relation_hook get_relation_info_hook
#endif

namespace ck {

namespace {

Oid restricted_queue = InvalidOid;
AttrNumber restricted_id = InvalidAttrNumber;
bool restrict_every_scan = false;   // not only the statement's target
relation_hook_type previous_hook = nullptr;

// The target of the statement being planned (every scan of the queue, for a statement that
// reads it by id only) keeps the indexes that start with id. (Plain C inside: it may raise.)
void keep_lookups_by_id(PlannerInfo *root, Oid relid, RelOptInfo *rel)
{
    if (relid != restricted_queue ||
        (!restrict_every_scan && root->parse->resultRelation != static_cast<int>(rel->relid)))
        return;
    List *kept = NIL;
    ListCell *cell;
    foreach (cell, rel->indexlist) {
        IndexOptInfo *index = static_cast<IndexOptInfo *>(lfirst(cell));
        if (index->nkeycolumns > 0 && index->indexkeys[0] == restricted_id)
            kept = lappend(kept, index);
    }
    rel->indexlist = kept;
}

#if PG_VERSION_NUM >= 190000
void only_lookups_by_id(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
    if (previous_hook != nullptr)
        previous_hook(root, rel, rte);
    if (rte->rtekind == RTE_RELATION)
        keep_lookups_by_id(root, rte->relid, rel);
}
#else
void only_lookups_by_id(PlannerInfo *root, Oid relid, bool inhparent, RelOptInfo *rel)
{
    if (previous_hook != nullptr)
        previous_hook(root, relid, inhparent, rel);
    keep_lookups_by_id(root, relid, rel);
}
#endif

} // namespace

void queue_plan_init()
{
    previous_hook = ck_relation_hook;
    ck_relation_hook = only_lookups_by_id;
}

void plan_apart(const QueuePlan &p, Oid queue)
{
    bool planning = pg_call([&] {
        AcceptInvalidationMessages();
        return !p.planned || !SPI_plan_is_valid(p.plan);
    });
    if (!planning)
        return;
    struct Restriction {
        Restriction(Oid queue, bool every_scan)
        {
            restricted_id = pg_call([&] { return get_attnum(queue, "id"); });
            restricted_queue = queue;
            restrict_every_scan = every_scan;
        }
        ~Restriction() { restricted_queue = InvalidOid; }
    } restriction(queue, p.by_id);
    pg_call([&] {
        int nest = push_settings({{"enable_seqscan", "off"}, {"enable_bitmapscan", "off"}, {"enable_sort", "off"},
                                  {"jit", "off"}});
        // The locks it takes are held to the end of the transaction, so the execution that
        // follows receives no invalidation in between and runs this plan.
        ReleaseCachedPlan(SPI_plan_get_cached_plan(p.plan), CurrentResourceOwner);
        pop_settings(nest);
    });
    p.planned = true;
}

} // namespace ck
