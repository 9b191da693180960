// ck.race_audit: read-decide-write races in SQL and PL/pgSQL functions and procedures
// (RULES.md: "the one rule behind all others", "read, decide, write the same row", "write
// skew"). Each row names the read, the write, the rule and what fixes it.
//
// What it catches. A *read* is a SELECT of a table T (top level, a sub-select, a CTE, the
// query of FOR r IN ..., the FROM of an UPDATE) whose rows are not locked FOR UPDATE, FOR NO
// KEY UPDATE or FOR SHARE. Its result goes into the statement's INTO targets, an assigned
// variable, the FOR loop's record, or FOUND (a PL/pgSQL SELECT or PERFORM without INTO); a
// read inside an expression with no target (IF EXISTS (...), IF (SELECT count(*) ...) > 1) is
// a condition, used where it is read. A later UPDATE of T or INSERT into T whose statement,
// or a statement between the two, names one of those targets (or that follows the condition,
// or that holds the read itself) is a *write guarded by the read*:
//   - lost_update: an UPDATE of T whose SET uses the value read (SET qty = q - n), or that
//     follows a read of single values (SELECT state INTO s ... IF s = 'free' THEN UPDATE), or
//     an UPDATE that reads T itself in a sub-select (SET qty = (SELECT qty ...) - 1, WHERE id =
//     (SELECT id ... LIMIT 1)), unless its WHERE re-checks a column of T outside every unique
//     index (AND qty >= n, AND version = v, AND state = 'free'): then PostgreSQL re-checks the
//     row after waiting for its lock and nothing is lost.
//   - write_skew: an INSERT into T after a check of T (count, EXISTS, FOUND, any value read), in
//     the same statement too (INSERT ... WHERE NOT EXISTS (SELECT ... FROM T): one statement
//     still reads one snapshot, and an uncommitted row is invisible to it), unless the INSERT
//     has ON CONFLICT or a unique index or exclusion constraint of T covers the check: all its
//     key columns are compared in the check's WHERE; and an UPDATE of T after a check over a
//     set of rows (count, EXISTS, FOUND) that does not use the value read ("a doctor stays on
//     call"): a re-check of the written row's columns does not help there.
// A read is not a race when a statement before it took a row lock (a locking SELECT of any
// table), LOCK TABLE, or an advisory lock (pg_advisory_[xact_]lock, ck.xact_lock,
// ck.session_lock, ck.lock_rows and their try_ forms), with no COMMIT or ROLLBACK between that
// lock and the write: the callers are taken to be serialised on what the check is about (the
// show's row before counting its seats). A locking read also makes its own UPDATE safe, but not
// an INSERT: a row that does not exist cannot be locked. A function or procedure is skipped
// when its body runs SET TRANSACTION ISOLATION LEVEL SERIALIZABLE (or sets transaction_isolation
// or default_transaction_isolation to serializable), or when its own SET clause (proconfig)
// sets one of them to serializable: SERIALIZABLE protects the rule if every transaction that
// touches it runs SERIALIZABLE, which the audit assumes. One row per write statement (the read
// the write itself names, else the first read that guards it); a body that cannot be analysed
// gives one row of kind 'could not analyse' with the error as its rule, as ck.lock_audit does.
//
// What it cannot see. Dynamic SQL (EXECUTE, the text given to ck.retry): whether a function is
// only ever called through CALL ck.retry(..., 'serializable') is not known (give it SET
// default_transaction_isolation = serializable to say so). Data flow is by name: a value
// copied into another variable, passed to another function or read into a field of a row is
// lost track of, and a variable used for something else between the read and the write still
// counts as used. Which rows are written is not compared with which rows were read: a read of
// one row of T and an UPDATE of another row of T pair up. Unique indexes on expressions
// (lower(name)) cover no check; a partial unique index covers one as a plain one would. A lock
// taken before the read is assumed to be on what the check is about. Multi-statement SQL
// functions carry no value from one statement to the next, so only races within one statement
// are found there. Writes through other functions (ck.try_decrement, ck.update_if_version) are
// not writes here: they are the fixes. DELETE and MERGE are not looked at.
//
// The candidates, the per-function subtransaction (always rolled back) and the walk over every
// raw statement of a body are shared with the other audits (function_bodies.cpp); the INTO
// targets come from the walk's targets callback. All of it is plain C over palloc'd data
// inside one pg_call per function.
#include "base/boundary.hpp"
#include "audits/function_bodies.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "catalog/pg_proc.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
}

namespace {

// A read of a table whose rows it did not lock (locked: it did, and it is kept for an UPDATE).
struct Read {
    int stmt;
    Oid relid;
    List *targets;      // char *: the names its result goes into
    bool in_place;      // a condition: used where it is read
    bool in_write;      // inside a write statement: used by that write
    bool set;           // a decision over a set of rows: count, EXISTS, FOUND
    bool counts;        // an aggregate (count, sum, ...): a capacity rule
    bool locked;        // FOR UPDATE, FOR NO KEY UPDATE, FOR SHARE
    List *filter;       // int: attributes of relid its WHERE compares
    AttrNumber overlap; // the attribute its WHERE compares with &&
};

// SET col = from op ... (op '-' or '+'; from a variable, or a sub-select when from_select).
struct SetItem {
    const char *col;
    char op;
    const char *from;
    bool from_select;
};

struct Write {
    int stmt;
    Oid relid;
    bool insert;
    bool on_conflict;
    List *guard; // int: attributes of relid its WHERE compares, sub-selects left out
    List *sets;  // SetItem *
};

// What the walk found in one body.
struct Facts {
    List *stmts;   // char *: statement texts, in walk order
    List *names;   // List * of char *, per statement: the names it refers to
    List *reads;   // Read *
    List *writes;  // Write *
    List *locks;   // int: statements that lock rows they read
    List *calls;   // int: statements that take an advisory lock, lock rows by key or LOCK a table
    List *commits; // int: COMMIT or ROLLBACK before that statement
    List *ctes;    // char *: CTE names of the statement being walked
    List *pending; // char *: the targets of the next statement
    int current;
    bool plpgsql;
    bool serializable;
};

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

bool names_contain(List *names, const char *name)
{
    ListCell *lc;
    foreach (lc, names) {
        if (name != nullptr && strcmp((const char *) lfirst(lc), name) == 0)
            return true;
    }
    return false;
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
    case T_SelectStmt:
    case T_InsertStmt:
    case T_UpdateStmt:
    case T_DeleteStmt:
    case T_MergeStmt:
    case T_PLAssignStmt:
        break;
    default:
        return false;
    }
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

// Does a statement after the read's, up to the write's, name one of the read's targets?
bool used(const Facts *f, const Read *r, int until)
{
    for (int i = r->stmt + 1; i <= until; i++) {
        ListCell *lc;
        foreach (lc, (List *) list_nth(f->names, i)) {
            if (names_contain(r->targets, (const char *) lfirst(lc)))
                return true;
        }
    }
    return false;
}

bool committed_between(const Facts *f, int from, int to)
{
    ListCell *lc;
    foreach (lc, f->commits) {
        if (lfirst_int(lc) > from && lfirst_int(lc) <= to)
            return true;
    }
    return false;
}

// A lock taken before the read (by a locking read in an earlier statement, or by a lock call in
// an earlier statement or the read's own: ck.lock_rows('t', ARRAY(SELECT ...))) and still held
// at the write.
bool serialised(const Facts *f, const Read *r, const Write *w)
{
    ListCell *lc;
    foreach (lc, f->locks) {
        if (lfirst_int(lc) < r->stmt && !committed_between(f, lfirst_int(lc), w->stmt))
            return true;
    }
    foreach (lc, f->calls) {
        if (lfirst_int(lc) <= r->stmt && !committed_between(f, lfirst_int(lc), w->stmt))
            return true;
    }
    return false;
}

// The key columns of each unique index (exclusion constraints too, with exclusion) of relid:
// a List of int Lists; an index on an expression is left out.
List *unique_keys(Oid relid, bool exclusion)
{
    List *out = NIL;
    Relation rel = table_open(relid, AccessShareLock);
    List *indexes = RelationGetIndexList(rel);
    table_close(rel, AccessShareLock);
    ListCell *lc;
    foreach (lc, indexes) {
        HeapTuple tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
        if (!HeapTupleIsValid(tup))
            continue;
        Form_pg_index index = (Form_pg_index) GETSTRUCT(tup);
        if (index->indisunique || (exclusion && index->indisexclusion)) {
            List *key = NIL;
            bool plain = true;
            for (int i = 0; i < index->indnkeyatts; i++) {
                plain = plain && index->indkey.values[i] != 0;
                key = lappend_int(key, index->indkey.values[i]);
            }
            if (plain)
                out = lappend(out, key);
        }
        ReleaseSysCache(tup);
    }
    return out;
}

// Does a unique index or exclusion constraint have all its key columns among those the check
// compares?
bool covered(const Read *r)
{
    ListCell *lc;
    foreach (lc, unique_keys(r->relid, true)) {
        List *key = (List *) lfirst(lc);
        ListCell *att;
        bool all = true;
        foreach (att, key)
            all = all && list_member_int(r->filter, lfirst_int(att));
        if (all)
            return true;
    }
    return false;
}

// Does the UPDATE's WHERE compare a column that no unique index has (a re-check of the row)?
bool guarded(const Write *w)
{
    List *keys = NIL;
    ListCell *lc;
    foreach (lc, unique_keys(w->relid, false))
        keys = list_concat(keys, (List *) lfirst(lc));
    foreach (lc, w->guard) {
        if (!list_member_int(keys, lfirst_int(lc)))
            return true;
    }
    return false;
}

// SET col = v - ... with v the value read (or, in one statement, a sub-select's).
const SetItem *set_from(const Write *w, const Read *r, bool same)
{
    ListCell *lc;
    foreach (lc, w->sets) {
        const SetItem *item = (const SetItem *) lfirst(lc);
        if ((same && item->from_select) || names_contain(r->targets, item->from))
            return item;
    }
    return nullptr;
}

bool uses_in_set(const Facts *f, const Write *w, const Read *r)
{
    ListCell *lc;
    foreach (lc, (List *) list_nth(f->names, w->stmt)) {
        if (names_contain(r->targets, (const char *) lfirst(lc)))
            return true;
    }
    return false;
}

const char *relation_name(Oid relid)
{
    return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
}

const char *attribute_list(Oid relid, List *atts, AttrNumber except)
{
    StringInfoData s;
    initStringInfo(&s);
    ListCell *lc;
    foreach (lc, atts) {
        if (lfirst_int(lc) == except)
            continue;
        appendStringInfo(&s, "%s%s", s.len > 0 ? ", " : "", quote_identifier(get_attname(relid, lfirst_int(lc), false)));
    }
    return s.data;
}

const char *const LostUpdateRule =
    "read, decide in code, write: the row can change between the read and the write, and under READ COMMITTED the "
    "other transaction's change is lost (RULES.md: read, decide, write the same row)";
const char *const WriteSkewRule =
    "a check over a set of rows guards the write: two transactions pass the check on the same snapshot and both "
    "write, under READ COMMITTED and REPEATABLE READ (RULES.md: write skew)";

// ck's counters are smallint, integer or bigint columns (or domains over them).
bool is_counter(Oid relid, const char *col)
{
    AttrNumber att = get_attnum(relid, col);
    if (att == InvalidAttrNumber)
        return false;
    Oid type = getBaseType(get_atttype(relid, att));
    return type == INT2OID || type == INT4OID || type == INT8OID;
}

const char *lost_update_fix(const Write *w, const SetItem *item)
{
    const char *table = relation_name(w->relid);
    if (item != nullptr && !is_counter(w->relid, item->col))
        return psprintf("one UPDATE ... SET %s = %s %c amount%s, or SELECT ... FOR NO KEY UPDATE in the read", item->col,
                        item->col, item->op, item->op == '-' ? psprintf(" WHERE %s >= amount", item->col) : "");
    if (item != nullptr && item->op == '-')
        return psprintf("ck.try_decrement('%s', <key>, '%s', <amount>) (one UPDATE ... SET %s = %s - amount WHERE "
                        "%s >= amount), or SELECT ... FOR NO KEY UPDATE in the read",
                        table, item->col, item->col, item->col, item->col);
    if (item != nullptr)
        return psprintf("ck.try_increment('%s', <key>, '%s', <amount>) (one UPDATE ... SET %s = %s + amount), or "
                        "SELECT ... FOR NO KEY UPDATE in the read",
                        table, item->col, item->col, item->col);
    return psprintf("SELECT ... FOR NO KEY UPDATE in the read, or write only while the row is as read: "
                    "ck.update_if_version('%s', ...) or ck.transition, or UPDATE ... WHERE <the value read>",
                    table);
}

const char *write_skew_fix(const Write *w, const Read *r)
{
    const char *table = relation_name(w->relid);
    if (!w->insert)
        return psprintf("lock the rows the check reads before deciding (SELECT ... FOR NO KEY UPDATE, or "
                        "ck.lock_rows('%s', <keys>)), or CALL ck.retry(..., 'serializable')",
                        table);
    if (r->overlap != InvalidAttrNumber)
        return psprintf("an exclusion constraint: ck.add_overlap_guard('%s', '%s', '{%s}')", table,
                        get_attname(r->relid, r->overlap, false), attribute_list(r->relid, r->filter, r->overlap));
    if (r->counts && r->filter != NIL)
        return psprintf("if at most one row may match, a unique constraint on (%s): ck.unique_guard_ddl('%s', '{%s}'); "
                        "else lock the row the count belongs to first (SELECT ... FOR NO KEY UPDATE), or "
                        "CALL ck.retry(..., 'serializable') in every transaction that writes %s",
                        attribute_list(r->relid, r->filter, InvalidAttrNumber), table,
                        attribute_list(r->relid, r->filter, InvalidAttrNumber), table);
    if (r->filter != NIL && !r->counts)
        return psprintf("a unique constraint on (%s): ck.unique_guard_ddl('%s', '{%s}'), then INSERT ... ON CONFLICT",
                        attribute_list(r->relid, r->filter, InvalidAttrNumber), table,
                        attribute_list(r->relid, r->filter, InvalidAttrNumber));
    return psprintf("CALL ck.retry(..., 'serializable') in every transaction that writes %s", table);
}

struct Row {
    const char *kind;
    const char *read;
    const char *write;
    const char *rule;
    const char *fix;
};

// Where the rows of one function go.
struct Audit {
    List *rows; // Row *
    MemoryContext out;
};

void add_row(Audit *a, const Row &row)
{
    MemoryContext old = MemoryContextSwitchTo(a->out);
    Row *r = (Row *) palloc(sizeof(Row));
    r->kind = pstrdup(row.kind);
    r->read = row.read != nullptr ? pstrdup(row.read) : nullptr;
    r->write = row.write != nullptr ? pstrdup(row.write) : nullptr;
    r->rule = pstrdup(row.rule);
    r->fix = row.fix != nullptr ? pstrdup(row.fix) : nullptr;
    a->rows = lappend(a->rows, r);
    MemoryContextSwitchTo(old);
}

// The race a read and a later write make, nullptr when they make none; *fix says what fixes it.
const char *race(const Facts *f, const Read *r, const Write *w, const char **fix)
{
    if (r->relid != w->relid)
        return nullptr;
    bool same = r->in_write && r->stmt == w->stmt;
    if (!same && (r->in_write || r->stmt >= w->stmt || !(r->in_place || used(f, r, w->stmt))))
        return nullptr;
    if (serialised(f, r, w))
        return nullptr;
    if (w->insert) {
        if (w->on_conflict || covered(r))
            return nullptr;
        *fix = write_skew_fix(w, r);
        return "write_skew";
    }
    if (r->locked && !committed_between(f, r->stmt, w->stmt))
        return nullptr;
    const SetItem *item = set_from(w, r, same);
    if (item != nullptr || uses_in_set(f, w, r) || !r->set) {
        if (guarded(w))
            return nullptr;
        *fix = lost_update_fix(w, item);
        return "lost_update";
    }
    *fix = write_skew_fix(w, r);
    return "write_skew";
}

// SET default_transaction_isolation (or transaction_isolation) = serializable on the function.
bool declared_serializable(HeapTuple tup)
{
    bool isnull;
    Datum config = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proconfig, &isnull);
    if (isnull)
        return false;
    Datum *items;
    bool *nulls;
    int n;
    deconstruct_array(DatumGetArrayTypeP(config), TEXTOID, -1, false, TYPALIGN_INT, &items, &nulls, &n);
    for (int i = 0; i < n; i++) {
        const char *item = TextDatumGetCString(items[i]);
        if (pg_strcasecmp(item, "default_transaction_isolation=serializable") == 0 ||
            pg_strcasecmp(item, "transaction_isolation=serializable") == 0)
            return true;
    }
    return false;
}

// Runs inside the subtransaction; every allocation but the rows is thrown away.
void analyse(const ck::AuditCandidate &c, HeapTuple tup, void *arg)
{
    Audit *a = static_cast<Audit *>(arg);
    if (declared_serializable(tup))
        return;
    Facts f{};
    f.plpgsql = !c.is_sql;
    ck::BodyWalk w{on_statement, on_effect, on_maybe, &f, false, on_targets};
    if (c.is_sql)
        ck::walk_sql_body(tup, &w);
    else
        ck::walk_plpgsql_body(c.fn, &w);
    if (f.serializable)
        return;
    ListCell *lw;
    foreach (lw, f.writes) {
        const Write *wr = (const Write *) lfirst(lw);
        // The read the write itself names first (of a transfer's two balances, its own), then any.
        const Read *found = nullptr;
        const char *kind = nullptr, *fix = nullptr;
        for (int pass = 0; pass < 2 && found == nullptr; pass++) {
            ListCell *lr;
            foreach (lr, f.reads) {
                const Read *r = (const Read *) lfirst(lr);
                if (pass == 0 && !uses_in_set(&f, wr, r))
                    continue;
                kind = race(&f, r, wr, &fix);
                if (kind != nullptr) {
                    found = r;
                    break;
                }
            }
        }
        if (found != nullptr)
            add_row(a, Row{kind, (const char *) list_nth(f.stmts, found->stmt), (const char *) list_nth(f.stmts, wr->stmt),
                           strcmp(kind, "lost_update") == 0 ? LostUpdateRule : WriteSkewRule, fix});
    }
}

Datum text_or_null(const char *s, bool *isnull)
{
    *isnull = s == nullptr;
    return s != nullptr ? CStringGetTextDatum(s) : (Datum) 0;
}

// Its rows; of a body that failed half-way, only the error (its rows are dropped with it).
void report(const ck::AuditCandidate &c, const char *error, void *arg, ReturnSetInfo *rsinfo)
{
    Audit *a = static_cast<Audit *>(arg);
    if (error != nullptr) {
        Row *r = (Row *) palloc0(sizeof(Row));
        r->kind = "could not analyse";
        r->rule = error;
        a->rows = list_make1(r);
    }
    ListCell *lc;
    foreach (lc, a->rows) {
        const Row *r = (const Row *) lfirst(lc);
        Datum values[6];
        bool nulls[6] = {false};
        values[0] = ObjectIdGetDatum(c.fn);
        values[1] = CStringGetTextDatum(r->kind);
        values[2] = text_or_null(r->read, &nulls[2]);
        values[3] = text_or_null(r->write, &nulls[3]);
        values[4] = CStringGetTextDatum(r->rule);
        values[5] = text_or_null(r->fix, &nulls[5]);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    a->rows = NIL;
}

} // namespace

CK_FUNCTION(ck_race_audit)
{
    Audit a{NIL, CurrentMemoryContext};
    ck::run_audit(fcinfo, analyse, report, &a, ck::FunctionsAndProcedures);
    return (Datum) 0;
}
