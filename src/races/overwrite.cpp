// Which UPDATE statements can lose an update, decided from the query while it is planned (the
// planner hook), and the check put into their plans.
//
// An UPDATE overwrites when a SET column's new value refers to no column of the row being
// updated but holds a constant or a parameter (SET qty = $1, SET qty = 41; not SET qty = qty - 1,
// nor SET updated_at = now(), which carries nothing the application read), and it is unguarded when its
// WHERE tests no column but key columns (those of unique indexes): nothing in the statement
// re-checks what the transaction read. Such a statement gets ck_internal.race_check(table,
// xmin, ctid, its text, the columns) as the last test of each scan of its target (the leaf
// partitions of a partitioned one), where it sees each row the UPDATE is about to change,
// including the newer version EvalPlanQual re-tests after a wait (races/check.cpp decides).
//
// Left alone, so never reported: an UPDATE with FROM (its new values come from a join, and a
// row can be scanned and then not joined), one whose WHERE tests a non-key column (a guard,
// even an unrelated one: the detector prefers silence to a false report), and plans other
// planners make (Citus's distributed ones). The plan keeps the check while it is cached; the
// check does nothing once the detector is off, and turning it on or off replans
// (races/mode.cpp). The function must be the extension's own, so that no one can slip a
// function of the same name into other people's UPDATE statements.
#include "races/overwrite.hpp"
#include "base/statement_text.hpp"
#include "base/tree_walker.hpp"
#include "races/mode.hpp"
#include "races/reports.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "utils/rel.h"
#include "utils/relcache.h"
}

#include <cstring>

namespace ck {

namespace {

planner_hook_type prev_planner = nullptr;

// What an expression refers to: the target's columns, and whether it holds a value from outside
// the statement (a constant or a parameter), one the application may have computed from what it
// read (SET updated_at = now() holds none).
struct Seen {
    Index target;
    int depth;            // query levels below the statement
    Bitmapset *columns;   // the target's columns found (offset by FirstLowInvalidHeapAttributeNumber)
    bool any;             // a column of the target
    bool input;           // a constant or a parameter
};

bool look(Node *node, void *arg)
{
    Seen *s = static_cast<Seen *>(arg);
    if (node == nullptr)
        return false;
    if (IsA(node, Const) || IsA(node, Param)) {
        s->input = true;
        return false;
    }
    if (IsA(node, Var)) {
        Var *v = reinterpret_cast<Var *>(node);
        if (v->varno == static_cast<int>(s->target) && static_cast<int>(v->varlevelsup) == s->depth) {
            s->any = true;
            s->columns = bms_add_member(s->columns, v->varattno - FirstLowInvalidHeapAttributeNumber);
        }
        return false;
    }
    if (IsA(node, Query)) {
        s->depth++;
        bool stop = query_tree_walker(reinterpret_cast<Query *>(node), as_walker(look), s, 0);
        s->depth--;
        return stop;
    }
    return expression_tree_walker(node, as_walker(look), s);
}

// The SET columns whose value refers to no column of the target but holds a value from outside
// the statement, quoted and comma-separated.
bool overwritten_columns(Query *parse, Relation rel, char *out, size_t size)
{
    out[0] = '\0';
    ListCell *lc;
    foreach (lc, parse->targetList) {
        TargetEntry *te = static_cast<TargetEntry *>(lfirst(lc));
        if (te->resjunk)
            continue;
        Seen s{static_cast<Index>(parse->resultRelation), 0, nullptr, false, false};
        look(reinterpret_cast<Node *>(te->expr), &s);
        if (s.any || !s.input)
            continue;
        Form_pg_attribute a = TupleDescAttr(RelationGetDescr(rel), te->resno - 1);
        size_t used = strlen(out);
        snprintf(out + used, size - used, "%s%s", used > 0 ? ", " : "", quote_identifier(NameStr(a->attname)));
    }
    return out[0] != '\0';
}

// Whether the WHERE tests a column that is no key column (or the row as a whole, or xmin).
bool guarded(Query *parse, Relation rel)
{
    Seen s{static_cast<Index>(parse->resultRelation), 0, nullptr, false, false};
    look(parse->jointree->quals, &s);
    Bitmapset *keys = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_KEY);
    keys = bms_add_member(keys, SelfItemPointerAttributeNumber - FirstLowInvalidHeapAttributeNumber);
    return !bms_is_subset(s.columns, keys);
}

Oid check_function()
{
    Oid ext = get_extension_oid("concurrency_kit", true);
    if (!OidIsValid(ext))
        return InvalidOid;
    Oid args[5] = {REGCLASSOID, XIDOID, TIDOID, TEXTOID, TEXTOID};
    Oid fn = LookupFuncName(list_make2(makeString(pstrdup("ck_internal")), makeString(pstrdup("race_check"))), 5,
                            args, true);
    if (!OidIsValid(fn) || getExtensionOfObject(ProcedureRelationId, fn) != ext)
        return InvalidOid;
    return fn;
}

Expr *make_check(Oid fn, Index rti, Oid relid, const char *write, const char *columns)
{
    List *args = list_make5(makeConst(REGCLASSOID, -1, InvalidOid, sizeof(Oid), ObjectIdGetDatum(relid), false, true),
                            makeVar(rti, MinTransactionIdAttributeNumber, XIDOID, -1, InvalidOid, 0),
                            makeVar(rti, SelfItemPointerAttributeNumber, TIDOID, -1, InvalidOid, 0),
                            makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1, CStringGetTextDatum(write), false, false),
                            makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1, CStringGetTextDatum(columns), false, false));
    return reinterpret_cast<Expr *>(makeFuncExpr(fn, BOOLOID, args, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL));
}

// Adds the check to every scan of rti under plan.
void add_to_scans(Plan *plan, Index rti, Expr *check)
{
    if (plan == nullptr)
        return;
    ListCell *lc;
    switch (nodeTag(plan)) {
    case T_SeqScan:
    case T_SampleScan:
    case T_IndexScan:
    case T_BitmapHeapScan:
    case T_TidScan:
    case T_TidRangeScan:
        if (reinterpret_cast<Scan *>(plan)->scanrelid == rti)
            plan->qual = lappend(plan->qual, static_cast<Expr *>(copyObjectImpl(check)));
        break;
    case T_Append:
        foreach (lc, reinterpret_cast<Append *>(plan)->appendplans)
            add_to_scans(static_cast<Plan *>(lfirst(lc)), rti, check);
        break;
    case T_MergeAppend:
        foreach (lc, reinterpret_cast<MergeAppend *>(plan)->mergeplans)
            add_to_scans(static_cast<Plan *>(lfirst(lc)), rti, check);
        break;
    case T_SubqueryScan:
        add_to_scans(reinterpret_cast<SubqueryScan *>(plan)->subplan, rti, check);
        break;
    default:
        break;
    }
    add_to_scans(plan->lefttree, rti, check);
    add_to_scans(plan->righttree, rti, check);
}

// What the planner is about to plan: an UPDATE that overwrites without a guard, with the
// columns it overwrites. Read before planning, which rewrites the statement's target list.
struct Overwrite {
    bool unguarded;
    char columns[128];
    char write[race_text_size];
};

void find_overwrite(Query *parse, const char *query_string, Overwrite *o)
{
    o->unguarded = false;
    if (parse->commandType != CMD_UPDATE || parse->resultRelation == 0 || list_length(parse->jointree->fromlist) != 1)
        return;
    RangeTblEntry *target = rt_fetch(parse->resultRelation, parse->rtable);
    if (target->relkind != RELKIND_RELATION && target->relkind != RELKIND_PARTITIONED_TABLE)
        return;
    Relation rel = table_open(target->relid, NoLock);   // locked by the parser
    o->unguarded = overwritten_columns(parse, rel, o->columns, sizeof o->columns) && !guarded(parse, rel);
    table_close(rel, NoLock);
    if (o->unguarded)
        statement_text(o->write, sizeof o->write, query_string, parse->stmt_location, parse->stmt_len);
}

void add_checks(const Overwrite &o, PlannedStmt *result)
{
    if (!IsA(result->planTree, ModifyTable))
        return;
    Oid fn = check_function();
    if (!OidIsValid(fn))
        return;
    ModifyTable *mt = reinterpret_cast<ModifyTable *>(result->planTree);
    ListCell *lc;
    foreach (lc, mt->resultRelations) {
        Index rti = lfirst_int(lc);
        RangeTblEntry *rte = rt_fetch(rti, result->rtable);
        if (rte->relkind == RELKIND_RELATION)
            add_to_scans(result->planTree, rti, make_check(fn, rti, rte->relid, o.write, o.columns));
    }
}

PlannedStmt *on_planner(Query *parse, const char *query_string, int cursor_options, ParamListInfo bound_params
#if PG_VERSION_NUM >= 190000
                        , ExplainState *es
#endif
)
{
#if PG_VERSION_NUM >= 190000
#define RACE_PLANNER_ARGS parse, query_string, cursor_options, bound_params, es
#else
#define RACE_PLANNER_ARGS parse, query_string, cursor_options, bound_params
#endif
    Overwrite o;
    o.unguarded = false;
    if (race_mode != RACE_OFF)
        find_overwrite(parse, query_string, &o);
    PlannedStmt *result = prev_planner != nullptr ? prev_planner(RACE_PLANNER_ARGS) : standard_planner(RACE_PLANNER_ARGS);
    if (o.unguarded)
        add_checks(o, result);
    return result;
}

} // namespace

void race_overwrite_init()
{
    prev_planner = planner_hook;
    planner_hook = on_planner;
}

} // namespace ck
