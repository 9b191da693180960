// ck.lock_audit: finds statements of SQL and PL/pgSQL functions that take FOR UPDATE where
// FOR NO KEY UPDATE would do (README, "The rules behind it": row lock modes): the locked table is referenced by a
// foreign key, so FOR UPDATE also blocks inserts of referencing rows (their FK check takes
// FOR KEY SHARE), and the function neither deletes from that table nor updates a column of a
// referenced key.
//
// The candidates, the per-function subtransaction (always rolled back) and the walk over every
// raw statement of a body are shared with ck.volatility_audit (function_bodies.cpp); the
// judgement below works on raw parse trees, names resolved with the function's search path.
// All of it is plain C over palloc'd data inside one pg_call per function.
#include "base/boundary.hpp"
#include "audits/function_bodies.hpp"
#include "base/qualify.hpp"
#include "base/spi.hpp"


extern "C" {
#include "access/genam.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_constraint.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace {

// A relation a statement locks FOR UPDATE.
struct Lock {
    int stmt;
    Oid relid;
};

// What the walk found in one function body.
struct Facts {
    List *stmts;   // char *: statement texts, in walk order
    List *locks;   // Lock *
    List *deleted; // Oid: relations the function deletes from
    List *updated; // Oid relid, then int attnum, alternately: columns the function updates
    List *ctes;    // char *: CTE names of the statement being walked
    int current;   // index of that statement in stmts
};

void note_ctes(Facts *f, WithClause *with)
{
    if (with == nullptr)
        return;
    ListCell *lc;
    foreach (lc, with->ctes)
        f->ctes = lappend(f->ctes, lfirst_node(CommonTableExpr, lc)->ctename);
}

// The table a RangeVar names, InvalidOid for a CTE or a relation that does not exist.
Oid resolve(Facts *f, RangeVar *rv)
{
    if (rv->schemaname == nullptr) {
        ListCell *lc;
        foreach (lc, f->ctes) {
            if (strcmp((const char *) lfirst(lc), rv->relname) == 0)
                return InvalidOid;
        }
    }
    return RangeVarGetRelid(rv, NoLock, true);
}

void note_lock(Facts *f, RangeVar *rv)
{
    Oid relid = resolve(f, rv);
    if (!OidIsValid(relid))
        return;
    Lock *l = (Lock *) palloc(sizeof(Lock));
    l->stmt = f->current;
    l->relid = relid;
    f->locks = lappend(f->locks, l);
}

// The tables of a FROM item (through joins); with `name`, only the one so named or aliased. A
// sub-select so locked locks the rows of every table it reads (PostgreSQL pushes the clause
// down into it).
void lock_from_item(Facts *f, Node *item, const char *name)
{
    if (item == nullptr)
        return;
    if (IsA(item, RangeVar)) {
        RangeVar *rv = (RangeVar *) item;
        const char *visible = rv->alias != nullptr ? rv->alias->aliasname : rv->relname;
        if (name == nullptr || strcmp(visible, name) == 0)
            note_lock(f, rv);
    } else if (IsA(item, JoinExpr)) {
        JoinExpr *j = (JoinExpr *) item;
        lock_from_item(f, j->larg, name);
        lock_from_item(f, j->rarg, name);
    } else if (IsA(item, RangeSubselect)) {
        RangeSubselect *r = (RangeSubselect *) item;
        const char *alias = r->alias != nullptr ? r->alias->aliasname : nullptr;
        if ((name == nullptr || (alias != nullptr && strcmp(alias, name) == 0)) && IsA(r->subquery, SelectStmt)) {
            ListCell *lc;
            foreach (lc, ((SelectStmt *) r->subquery)->fromClause)
                lock_from_item(f, (Node *) lfirst(lc), nullptr);
        }
    }
}

void note_locking(Facts *f, SelectStmt *s)
{
    ListCell *lc;
    foreach (lc, s->lockingClause) {
        LockingClause *clause = lfirst_node(LockingClause, lc);
        if (clause->strength != LCS_FORUPDATE)
            continue;
        ListCell *item;
        if (clause->lockedRels == NIL) {
            foreach (item, s->fromClause)
                lock_from_item(f, (Node *) lfirst(item), nullptr);
            continue;
        }
        ListCell *rel;
        foreach (rel, clause->lockedRels) {
            const char *name = lfirst_node(RangeVar, rel)->relname;
            foreach (item, s->fromClause)
                lock_from_item(f, (Node *) lfirst(item), name);
        }
    }
}

void note_update(Facts *f, Oid relid, List *targets)
{
    ListCell *lc;
    foreach (lc, targets) {
        ResTarget *t = lfirst_node(ResTarget, lc);
        if (t->name == nullptr)
            continue;
        AttrNumber att = get_attnum(relid, t->name);
        if (att == InvalidAttrNumber)
            continue;
        f->updated = lappend_oid(f->updated, relid);
        f->updated = lappend_int(f->updated, att);
    }
}

bool lock_walker(Node *node, void *context)
{
    Facts *f = static_cast<Facts *>(context);
    if (node == nullptr)
        return false;
    switch (nodeTag(node)) {
    case T_SelectStmt: {
        SelectStmt *s = (SelectStmt *) node;
        note_ctes(f, s->withClause);
        note_locking(f, s);
        break;
    }
    case T_DeleteStmt: {
        DeleteStmt *s = (DeleteStmt *) node;
        note_ctes(f, s->withClause);
        Oid relid = resolve(f, s->relation);
        if (OidIsValid(relid))
            f->deleted = lappend_oid(f->deleted, relid);
        break;
    }
    case T_UpdateStmt: {
        UpdateStmt *s = (UpdateStmt *) node;
        note_ctes(f, s->withClause);
        Oid relid = resolve(f, s->relation);
        if (OidIsValid(relid))
            note_update(f, relid, s->targetList);
        break;
    }
    case T_InsertStmt:
        note_ctes(f, ((InsertStmt *) node)->withClause);
        break;
    case T_MergeStmt: {
        MergeStmt *s = (MergeStmt *) node;
        note_ctes(f, s->withClause);
        Oid relid = resolve(f, s->relation);
        ListCell *lc;
        foreach (lc, s->mergeWhenClauses) {
            MergeWhenClause *w = lfirst_node(MergeWhenClause, lc);
            if (!OidIsValid(relid))
                break;
            if (w->commandType == CMD_DELETE)
                f->deleted = lappend_oid(f->deleted, relid);
            else if (w->commandType == CMD_UPDATE)
                note_update(f, relid, w->targetList);
        }
        break;
    }
    case T_PLAssignStmt: {
        PLAssignStmt *a = (PLAssignStmt *) node;
        return lock_walker((Node *) a->indirection, f) || lock_walker((Node *) a->val, f);
    }
    default:
        break;
    }
    return raw_expression_tree_walker(node, ck::as_walker(lock_walker), f);
}

bool on_statement(RawStmt *raw, const char *source, void *arg)
{
    Facts *f = static_cast<Facts *>(arg);
    if (!ck::reads_or_writes_rows(raw->stmt))
        return false; // a utility statement locks no rows
    f->current = list_length(f->stmts);
    f->stmts = lappend(f->stmts, ck::statement_text(raw, source));
    f->ctes = NIL;
    lock_walker(raw->stmt, f);
    return false;
}

// COMMIT, ROLLBACK and dynamic SQL do not stop the walk: the static statements still count.
bool on_other(const char *what, void *arg)
{
    return false;
}

// "name of schema.table" for the first foreign key that references relid, nullptr when none
// does; *keys gets the attribute numbers of every referenced key.
const char *referencing_keys(Oid relid, List **keys)
{
    const char *first = nullptr;
    Relation rel = table_open(ConstraintRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_constraint_confrelid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
    SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, nullptr, 1, &key);
    HeapTuple tup;
    while (HeapTupleIsValid(tup = systable_getnext(scan))) {
        Form_pg_constraint con = (Form_pg_constraint) GETSTRUCT(tup);
        if (con->contype != CONSTRAINT_FOREIGN)
            continue;
        bool isnull;
        Datum d = heap_getattr(tup, Anum_pg_constraint_confkey, RelationGetDescr(rel), &isnull);
        if (!isnull) {
            ArrayType *arr = DatumGetArrayTypeP(d);
            int n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
            int16 *atts = (int16 *) ARR_DATA_PTR(arr);
            for (int i = 0; i < n; i++)
                *keys = lappend_int(*keys, atts[i]);
        }
        if (first == nullptr) {
            char *nsp = get_namespace_name(get_rel_namespace(con->conrelid));
            char *name = get_rel_name(con->conrelid);
            first = psprintf("%s of %s", quote_identifier(NameStr(con->conname)),
                             nsp != nullptr && name != nullptr ? quote_qualified_identifier(nsp, name)
                                                               : psprintf("relation %u", con->conrelid));
        }
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return first;
}

// Does the function update a column of one of these keys of relid?
bool updates_key(const Facts *f, Oid relid, List *keys)
{
    for (int i = 0; i + 1 < list_length(f->updated); i += 2) {
        if (list_nth_oid(f->updated, i) == relid && list_member_int(keys, list_nth_int(f->updated, i + 1)))
            return true;
    }
    return false;
}

// Where the rows of one function go: statement, advice, alternately, in `out`.
struct Audit {
    List *rows;
    MemoryContext out;
};

const char *relation_name(Oid relid)
{
    return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
}

// Runs inside the subtransaction; every allocation but the rows is thrown away.
void analyse(const ck::AuditCandidate &c, HeapTuple tup, void *arg)
{
    Audit *a = static_cast<Audit *>(arg);
    Facts f{};
    ck::BodyWalk w{on_statement, on_other, on_other, &f, false};
    if (c.is_sql)
        ck::walk_sql_body(tup, &w);
    else
        ck::walk_plpgsql_body(c.fn, &w);

    int reported = -1; // one row per statement
    ListCell *lc;
    foreach (lc, f.locks) {
        Lock *l = (Lock *) lfirst(lc);
        if (l->stmt == reported || list_member_oid(f.deleted, l->relid))
            continue;
        List *keys = NIL;
        const char *fk = referencing_keys(l->relid, &keys);
        if (fk == nullptr || updates_key(&f, l->relid, keys))
            continue;
        reported = l->stmt;
        const char *advice = psprintf(
            "use FOR NO KEY UPDATE: %s is referenced by foreign key %s, and the function neither deletes "
            "from it nor changes a referenced key; FOR UPDATE also blocks inserts of rows that reference "
            "the locked rows",
            relation_name(l->relid), fk);
        MemoryContext old = MemoryContextSwitchTo(a->out);
        a->rows = lappend(a->rows, pstrdup((const char *) list_nth(f.stmts, l->stmt)));
        a->rows = lappend(a->rows, pstrdup(advice));
        MemoryContextSwitchTo(old);
    }
}

// Its rows; of a body that failed half-way, only the error (its rows are dropped with it).
void report(const ck::AuditCandidate &c, const char *error, void *arg, ReturnSetInfo *rsinfo)
{
    Audit *a = static_cast<Audit *>(arg);
    if (error != nullptr)
        a->rows = list_make2((void *) nullptr, (void *) error);
    for (int i = 0; i + 1 < list_length(a->rows); i += 2) {
        const char *statement = (const char *) list_nth(a->rows, i);
        const char *advice = (const char *) list_nth(a->rows, i + 1);
        Datum values[3] = {ObjectIdGetDatum(c.fn), statement ? CStringGetTextDatum(statement) : (Datum) 0,
                           CStringGetTextDatum(advice)};
        bool nulls[3] = {false, statement == nullptr, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    a->rows = NIL;
}

} // namespace

CK_FUNCTION(ck_lock_audit)
{
    Audit a{NIL, CurrentMemoryContext};
    ck::run_audit(fcinfo, analyse, report, &a);
    return (Datum) 0;
}
