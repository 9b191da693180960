// The walk that gathers the facts of one body (race_facts.hpp): every raw statement the body
// walk of function_bodies yields, its INTO targets from the walk's targets callback.
#include "audits/race_facts.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
}

namespace ck::race_audit {

bool names_contain(List *names, const char *name)
{
    ListCell *lc;
    foreach (lc, names) {
        if (name != nullptr && strcmp((const char *) lfirst(lc), name) == 0)
            return true;
    }
    return false;
}

namespace {

// Where the walker is inside one statement.
struct Ctx {
    Facts *f;
    List *targets;
    bool in_place;
    bool in_write;
    bool exists;
};

const char *last_name(List *names)
{
    Node *n = (Node *) llast(names);
    return IsA(n, String) ? strVal(n) : nullptr;
}

const char *first_name(ColumnRef *ref)
{
    Node *n = (Node *) linitial(ref->fields);
    return IsA(n, String) ? strVal(n) : nullptr;
}

// The table a RangeVar names, InvalidOid for a CTE or a relation that does not exist.
Oid table_of(Facts *f, RangeVar *rv)
{
    if (rv->schemaname == nullptr && names_contain(f->ctes, rv->relname))
        return InvalidOid;
    return RangeVarGetRelid(rv, NoLock, true);
}

// The attributes of relid that an expression compares (sub-selects left out), and the one it
// compares with &&.
struct Columns {
    Oid relid;
    List *atts;
    AttrNumber overlap;
};

AttrNumber column_of(Oid relid, Node *node)
{
    if (node == nullptr || !IsA(node, ColumnRef))
        return InvalidAttrNumber;
    const char *name = last_name(((ColumnRef *) node)->fields);
    return name != nullptr ? get_attnum(relid, name) : InvalidAttrNumber;
}

bool columns_walker(Node *node, void *context)
{
    Columns *c = static_cast<Columns *>(context);
    if (node == nullptr || IsA(node, SubLink))
        return false;
    if (IsA(node, ColumnRef)) {
        AttrNumber att = column_of(c->relid, node);
        if (att != InvalidAttrNumber)
            c->atts = list_append_unique_int(c->atts, att);
        return false;
    }
    if (IsA(node, A_Expr)) {
        A_Expr *e = (A_Expr *) node;
        const char *op = e->kind == AEXPR_OP ? last_name(e->name) : nullptr;
        if (op != nullptr && strcmp(op, "&&") == 0) {
            AttrNumber l = column_of(c->relid, e->lexpr), r = column_of(c->relid, e->rexpr);
            if (l != InvalidAttrNumber || r != InvalidAttrNumber)
                c->overlap = l != InvalidAttrNumber ? l : r;
        }
    }
    return raw_expression_tree_walker(node, ck::as_walker(columns_walker), c);
}

Columns columns(Oid relid, Node *expr)
{
    Columns c{relid, NIL, InvalidAttrNumber};
    columns_walker(expr, &c);
    return c;
}

bool is_aggregate(const char *name)
{
    static const char *const aggregates[] = {"count", "sum", "min", "max", "avg", "bool_or", "bool_and", "every"};
    for (const char *a : aggregates) {
        if (name != nullptr && strcmp(name, a) == 0)
            return true;
    }
    return false;
}

bool aggregate_walker(Node *node, void *context)
{
    if (node == nullptr || IsA(node, SubLink))
        return false;
    if (IsA(node, FuncCall) && is_aggregate(last_name(((FuncCall *) node)->funcname)))
        return true;
    return raw_expression_tree_walker(node, ck::as_walker(aggregate_walker), context);
}

bool is_lock_call(const char *name)
{
    static const char *const locks[] = {"pg_advisory_xact_lock", "pg_advisory_lock", "pg_try_advisory_xact_lock",
                                        "pg_try_advisory_lock", "xact_lock", "try_xact_lock", "session_lock",
                                        "lock_rows"};
    for (const char *l : locks) {
        if (name != nullptr && strcmp(name, l) == 0)
            return true;
    }
    return false;
}

// Does a locking clause of s (FOR SHARE or stronger) cover the FROM item visible as name?
bool locks_item(SelectStmt *s, const char *name)
{
    ListCell *lc;
    foreach (lc, s->lockingClause) {
        LockingClause *clause = lfirst_node(LockingClause, lc);
        if (clause->strength < LCS_FORSHARE)
            continue;
        if (clause->lockedRels == NIL)
            return true;
        ListCell *rel;
        foreach (rel, clause->lockedRels) {
            if (strcmp(lfirst_node(RangeVar, rel)->relname, name) == 0)
                return true;
        }
    }
    return false;
}

void note_read(Ctx *c, RangeVar *rv, SelectStmt *s, Node *where)
{
    Facts *f = c->f;
    Oid relid = table_of(f, rv);
    if (!OidIsValid(relid))
        return;
    Read *r = (Read *) palloc0(sizeof(Read));
    r->stmt = f->current;
    r->relid = relid;
    r->targets = c->targets;
    r->in_place = c->in_place;
    r->in_write = c->in_write;
    r->locked = s != nullptr && locks_item(s, rv->alias != nullptr ? rv->alias->aliasname : rv->relname);
    r->counts = s != nullptr && aggregate_walker((Node *) s->targetList, nullptr);
    r->set = c->exists || r->counts ||
             (list_length(c->targets) == 1 && strcmp((const char *) linitial(c->targets), "found") == 0);
    Columns cols = columns(relid, where);
    r->filter = cols.atts;
    r->overlap = cols.overlap;
    if (r->locked)
        f->locks = lappend_int(f->locks, f->current);
    f->reads = lappend(f->reads, r);
}

// The tables of a FROM item, through joins (a sub-select is a SelectStmt of its own).
void note_from_item(Ctx *c, Node *item, SelectStmt *s, Node *where)
{
    if (item == nullptr)
        return;
    if (IsA(item, RangeVar)) {
        note_read(c, (RangeVar *) item, s, where);
    } else if (IsA(item, JoinExpr)) {
        note_from_item(c, ((JoinExpr *) item)->larg, s, where);
        note_from_item(c, ((JoinExpr *) item)->rarg, s, where);
    }
}

void note_ctes(Facts *f, WithClause *with)
{
    ListCell *lc;
    if (with != nullptr) {
        foreach (lc, with->ctes)
            f->ctes = lappend(f->ctes, lfirst_node(CommonTableExpr, lc)->ctename);
    }
}

SetItem *set_item(ResTarget *t)
{
    if (t->name == nullptr || t->val == nullptr || !IsA(t->val, A_Expr))
        return nullptr;
    A_Expr *e = (A_Expr *) t->val;
    const char *op = e->kind == AEXPR_OP ? last_name(e->name) : nullptr;
    if (op == nullptr || (strcmp(op, "-") != 0 && strcmp(op, "+") != 0) || e->lexpr == nullptr)
        return nullptr;
    SetItem *item = (SetItem *) palloc0(sizeof(SetItem));
    item->col = t->name;
    item->op = op[0];
    if (IsA(e->lexpr, ColumnRef))
        item->from = first_name((ColumnRef *) e->lexpr);
    item->from_select = IsA(e->lexpr, SubLink);
    return item;
}

Write *note_write(Facts *f, RangeVar *rv)
{
    Oid relid = table_of(f, rv);
    if (!OidIsValid(relid))
        return nullptr;
    Write *w = (Write *) palloc0(sizeof(Write));
    w->stmt = f->current;
    w->relid = relid;
    f->writes = lappend(f->writes, w);
    return w;
}

bool race_walker(Node *node, void *context);

// The reads inside a write statement, used by that write: its sub-selects and CTEs, and the
// tables of an UPDATE's FROM.
bool walk_write(Node *node, List *from, Node *where, Ctx *c)
{
    bool in_write = c->in_write;
    c->in_write = true;
    ListCell *lc;
    foreach (lc, from)
        note_from_item(c, (Node *) lfirst(lc), nullptr, where);
    bool stop = raw_expression_tree_walker(node, ck::as_walker(race_walker), c);
    c->in_write = in_write;
    return stop;
}

bool race_walker(Node *node, void *context)
{
    Ctx *c = static_cast<Ctx *>(context);
    Facts *f = c->f;
    if (node == nullptr)
        return false;
    switch (nodeTag(node)) {
    case T_ColumnRef: {
        const char *name = first_name((ColumnRef *) node);
        if (name != nullptr)
            llast(f->names) = lappend((List *) llast(f->names), (void *) name);
        return false;
    }
    case T_FuncCall:
        if (is_lock_call(last_name(((FuncCall *) node)->funcname)))
            f->calls = lappend_int(f->calls, f->current);
        break;
    case T_SubLink: {
        SubLink *s = (SubLink *) node;
        bool exists = c->exists;
        c->exists = s->subLinkType == EXISTS_SUBLINK;
        bool stop = race_walker(s->subselect, c);
        c->exists = exists;
        return stop || race_walker(s->testexpr, c);
    }
    case T_SelectStmt: {
        SelectStmt *s = (SelectStmt *) node;
        note_ctes(f, s->withClause);
        ListCell *lc;
        foreach (lc, s->fromClause)
            note_from_item(c, (Node *) lfirst(lc), s, s->whereClause);
        break;
    }
    case T_UpdateStmt: {
        UpdateStmt *s = (UpdateStmt *) node;
        note_ctes(f, s->withClause);
        Write *w = note_write(f, s->relation);
        if (w != nullptr) {
            w->guard = columns(w->relid, s->whereClause).atts;
            ListCell *lc;
            foreach (lc, s->targetList) {
                SetItem *item = set_item(lfirst_node(ResTarget, lc));
                if (item != nullptr)
                    w->sets = lappend(w->sets, item);
            }
        }
        return walk_write(node, s->fromClause, s->whereClause, c);
    }
    case T_InsertStmt: {
        InsertStmt *s = (InsertStmt *) node;
        note_ctes(f, s->withClause);
        Write *w = note_write(f, s->relation);
        if (w != nullptr) {
            w->insert = true;
            w->on_conflict = s->onConflictClause != nullptr;
        }
        return walk_write(node, NIL, nullptr, c);
    }
    case T_DeleteStmt:
    case T_MergeStmt:
        return walk_write(node, NIL, nullptr, c);
    case T_PLAssignStmt: {
        // The target's name is no use of it; its subscripts and the value are.
        PLAssignStmt *a = (PLAssignStmt *) node;
        return race_walker((Node *) a->indirection, c) || race_walker((Node *) a->val, c);
    }
    default:
        break;
    }
    return raw_expression_tree_walker(node, ck::as_walker(race_walker), c);
}

bool is_serializable(Node *value)
{
    if (value == nullptr || !IsA(value, A_Const))
        return false;
    A_Const *c = (A_Const *) value;
    return !c->isnull && IsA(&c->val, String) && pg_strcasecmp(strVal(&c->val), "serializable") == 0;
}

// SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, SET [LOCAL] [default_]transaction_isolation.
bool sets_serializable(VariableSetStmt *s)
{
    if (s->name == nullptr)
        return false;
    ListCell *lc;
    if (s->kind == VAR_SET_MULTI) {
        foreach (lc, s->args) {
            DefElem *d = lfirst_node(DefElem, lc);
            if (strcmp(d->defname, "transaction_isolation") == 0 && is_serializable(d->arg))
                return true;
        }
        return false;
    }
    if (s->kind != VAR_SET_VALUE ||
        (strcmp(s->name, "transaction_isolation") != 0 && strcmp(s->name, "default_transaction_isolation") != 0))
        return false;
    foreach (lc, s->args) {
        if (is_serializable((Node *) lfirst(lc)))
            return true;
    }
    return false;
}

void on_targets(List *names, void *arg)
{
    static_cast<Facts *>(arg)->pending = names;
}

bool on_statement(RawStmt *raw, const char *source, void *arg)
{
    Facts *f = static_cast<Facts *>(arg);
    List *targets = f->pending;
    f->pending = NIL;
    Node *stmt = raw->stmt;
    switch (nodeTag(stmt)) {
    case T_VariableSetStmt:
        f->serializable = f->serializable || sets_serializable((VariableSetStmt *) stmt);
        return false;
    case T_LockStmt:
        // A statement of its own: a read after it is after the lock.
        f->calls = lappend_int(f->calls, list_length(f->stmts));
        f->stmts = lappend(f->stmts, ck::statement_text(raw, source));
        f->names = lappend(f->names, NIL);
        return false;
    default:
        break;
    }
    if (!ck::reads_or_writes_rows(stmt))
        return false;
    f->current = list_length(f->stmts);
    f->stmts = lappend(f->stmts, ck::statement_text(raw, source));
    f->names = lappend(f->names, NIL);
    f->ctes = NIL;
    Ctx c{f, NIL, false, false, false};
    if (f->plpgsql && IsA(stmt, PLAssignStmt)) {
        c.targets = list_make1(((PLAssignStmt *) stmt)->name);
    } else if (f->plpgsql && IsA(stmt, SelectStmt)) {
        // INTO targets; else a SELECT or PERFORM with FROM sets FOUND, and one without is an
        // expression: IF's condition, RETURN's value.
        if (targets != NIL)
            c.targets = targets;
        else if (((SelectStmt *) stmt)->fromClause != NIL)
            c.targets = list_make1((void *) "found");
        else
            c.in_place = true;
    }
    race_walker(stmt, &c);
    return false;
}

bool on_effect(const char *what, void *arg)
{
    Facts *f = static_cast<Facts *>(arg);
    f->commits = lappend_int(f->commits, list_length(f->stmts));
    return false;
}

// Dynamic SQL does not stop the walk: the static statements still count.
bool on_maybe(const char *what, void *arg)
{
    return false;
}

} // namespace

void gather_facts(const AuditCandidate &c, HeapTuple tup, Facts *f)
{
    f->plpgsql = !c.is_sql;
    ck::BodyWalk w{on_statement, on_effect, on_maybe, f, false, on_targets};
    if (c.is_sql)
        ck::walk_sql_body(tup, &w);
    else
        ck::walk_plpgsql_body(c.fn, &w);
}

} // namespace ck::race_audit
