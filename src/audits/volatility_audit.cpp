// ck.volatility_audit: finds SQL and PL/pgSQL functions whose volatility label breaks the
// rule of README "The rules behind it" (functions inside queries) (IMMUTABLE only without table reads, STABLE for
// read-only functions that read tables, VOLATILE for side effects).
//
// How each kind of body is analysed:
//  - SQL, string body: parse analysis with the SQL-function parser hooks (parameters
//    resolve), then the rewriter; the Query trees are walked (range tables, sub-queries,
//    CTEs, every function and operator through check_functions_in_node).
//  - SQL, BEGIN ATOMIC / RETURN body: the stored Query trees (prosqlbody), same walk.
//  - SQL with polymorphic arguments (string body) and PL/pgSQL: a raw-parse walk of every
//    statement (PL/pgSQL compiled by PL/pgSQL itself, as its validator does): RangeVars are
//    reads; function and operator names are resolved to every pg_proc / pg_operator
//    candidate, and a call counts as volatile when any candidate is (conservative).
//
// The candidates, the subtransaction and the PL/pgSQL walk are shared with ck.lock_audit
// (function_bodies.cpp). Each function is analysed inside a subtransaction that is always
// rolled back, so the locks taken by parse analysis and the temporary search_path go away,
// and a body that does not parse becomes a row "could not analyse: ..." instead of failing
// the whole audit.
// All analysis code below the driver is plain C over PostgreSQL data (palloc, List): it
// runs inside one pg_call per function and owns no C++ object.
#include "base/boundary.hpp"
#include "audits/function_bodies.hpp"
#include "base/qualify.hpp"
#include "base/spi.hpp"


extern "C" {
#include "catalog/namespace.h"
#include "utils/catcache.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "executor/functions.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

}

namespace {

// What the walk found in one function body.
struct Facts {
    List *reads;             // char *: relations read, display form, in order, no duplicates
    const char *effect;      // first certain side effect (write, DDL, lock, volatile call)
    const char *maybe;       // first possible side effect (dynamic SQL, ambiguous call)
    const char *stable_call; // first call of a STABLE function (matters for IMMUTABLE)
    List *ctes;              // char *: CTE names of the raw statement being walked
};

// One result row; the strings live in the caller's memory context.
struct Verdict {
    bool report;
    const char *suggested; // nullptr: could not analyse
    const char *reason;
};

void note_read(Facts *f, const char *name)
{
    ListCell *lc;
    foreach (lc, f->reads) {
        if (strcmp((const char *) lfirst(lc), name) == 0)
            return;
    }
    f->reads = lappend(f->reads, pstrdup(name));
}

void note_effect(Facts *f, const char *what)
{
    if (f->effect == nullptr)
        f->effect = what;
}

void note_maybe(Facts *f, const char *what)
{
    if (f->maybe == nullptr)
        f->maybe = what;
}

// schema.name, with "(view)" and the like for relations that are not plain tables.
const char *relation_display(Oid relid)
{
    char *nsp = get_namespace_name(get_rel_namespace(relid));
    char *rel = get_rel_name(relid);
    if (nsp == nullptr || rel == nullptr)
        return psprintf("relation %u", relid);
    const char *name = quote_qualified_identifier(nsp, rel);
    switch (get_rel_relkind(relid)) {
    case RELKIND_VIEW:
        return psprintf("%s (view)", name);
    case RELKIND_MATVIEW:
        return psprintf("%s (materialized view)", name);
    case RELKIND_FOREIGN_TABLE:
        return psprintf("%s (foreign table)", name);
    default:
        return name;
    }
}

const char *lock_strength_name(LockClauseStrength s)
{
    switch (s) {
    case LCS_FORKEYSHARE:
        return "FOR KEY SHARE";
    case LCS_FORSHARE:
        return "FOR SHARE";
    case LCS_FORNOKEYUPDATE:
        return "FOR NO KEY UPDATE";
    default:
        return "FOR UPDATE";
    }
}

/* ---------------------------------------------------------------------------------------
 * Analysed Query trees (SQL functions)
 * ------------------------------------------------------------------------------------- */

// check_functions_in_node callback: the volatility of every function the node calls.
bool note_function(Oid funcid, void *context)
{
    Facts *f = static_cast<Facts *>(context);
    char v = func_volatile(funcid);
    if (v == PROVOLATILE_VOLATILE)
        note_effect(f, psprintf("calls volatile function %s", format_procedure(funcid)));
    else if (v == PROVOLATILE_STABLE && f->stable_call == nullptr)
        f->stable_call = format_procedure(funcid);
    return false;
}

bool query_walker(Node *node, void *context);

// A Query: its kind decides writes and locks; its range table lists the tables read.
bool walk_query(Query *q, Facts *f)
{
    const char *verb = nullptr;
    switch (q->commandType) {
    case CMD_SELECT:
        break;
    case CMD_INSERT:
        verb = "INSERT into";
        break;
    case CMD_UPDATE:
        verb = "UPDATE of";
        break;
    case CMD_DELETE:
        verb = "DELETE from";
        break;
    case CMD_MERGE:
        verb = "MERGE into";
        break;
    case CMD_UTILITY:
        note_effect(f, psprintf("runs utility statement %s", CreateCommandName(q->utilityStmt)));
        return true;
    default:
        note_effect(f, "runs a statement that is not a SELECT");
        return true;
    }
    if (verb != nullptr) {
        RangeTblEntry *target = rt_fetch(q->resultRelation, q->rtable);
        note_effect(f, psprintf("writes: %s %s", verb, relation_display(target->relid)));
        return true;
    }
    if (q->rowMarks != NIL) {
        RowMarkClause *rc = linitial_node(RowMarkClause, q->rowMarks);
        RangeTblEntry *rte = rt_fetch(rc->rti, q->rtable);
        const char *what = rte->rtekind == RTE_RELATION ? relation_display(rte->relid) : "a sub-query";
        note_effect(f, psprintf("locks rows: SELECT ... %s on %s", lock_strength_name(rc->strength), what));
        return true;
    }
    ListCell *lc;
    foreach (lc, q->rtable) {
        RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
        if (rte->rtekind == RTE_RELATION)
            note_read(f, relation_display(rte->relid));
    }
    return query_tree_walker(q, ck::as_walker(query_walker), f, 0);
}

// Walks expressions and sub-queries; stops at the first certain side effect.
bool query_walker(Node *node, void *context)
{
    Facts *f = static_cast<Facts *>(context);
    if (node == nullptr)
        return false;
    if (f->effect != nullptr)
        return true;
    if (IsA(node, Query))
        return walk_query((Query *) node, f);
    if (IsA(node, NextValueExpr)) {
        note_effect(f, "calls volatile function nextval (identity column)");
        return true;
    }
    check_functions_in_node(node, note_function, f);
    if (f->effect != nullptr)
        return true;
    return expression_tree_walker(node, ck::as_walker(query_walker), f);
}

// A SELECT is rewritten as the executor would see it (views expanded, RLS quals added).
void walk_analysed(Query *q, Facts *f)
{
    if (walk_query(q, f) || q->commandType != CMD_SELECT)
        return;
    ListCell *lc;
    foreach (lc, pg_rewrite_query(q)) {
        if (query_walker((Node *) lfirst(lc), f))
            return;
    }
}

/* ---------------------------------------------------------------------------------------
 * Raw parse trees (PL/pgSQL statements, polymorphic SQL functions)
 * ------------------------------------------------------------------------------------- */

// A function written by name with nargs arguments: could this candidate be the one called?
bool arguments_fit(Form_pg_proc p, int nargs)
{
    if (p->prokind == PROKIND_PROCEDURE)
        return false;
    if (nargs == p->pronargs)
        return true;
    if (nargs < p->pronargs && nargs >= p->pronargs - p->pronargdefaults)
        return true;
    return OidIsValid(p->provariadic) && nargs >= p->pronargs - 1;
}

// Volatile when every candidate is; possibly volatile when some is; stable when none is
// immutable. Unknown names (not created yet, or dropped) are possible side effects.
void note_function_call(Facts *f, FuncCall *fc)
{
    char *schema;
    char *name;
    DeconstructQualifiedName(fc->funcname, &schema, &name);
    Oid nsp = schema != nullptr ? LookupExplicitNamespace(schema, true) : InvalidOid;
    int nargs = list_length(fc->args);
    int candidates = 0, volatile_ones = 0, immutable_ones = 0;
    CatCList *list = SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum(name));
    for (int i = 0; i < list->n_members; i++) {
        Form_pg_proc p = (Form_pg_proc) GETSTRUCT(&list->members[i]->tuple);
        if (schema != nullptr && p->pronamespace != nsp)
            continue;
        if (!arguments_fit(p, nargs))
            continue;
        candidates++;
        if (p->provolatile == PROVOLATILE_VOLATILE)
            volatile_ones++;
        else if (p->provolatile == PROVOLATILE_IMMUTABLE)
            immutable_ones++;
    }
    ReleaseSysCacheList(list);
    const char *display = NameListToString(fc->funcname);
    if (candidates == 0)
        note_maybe(f, psprintf("calls %s(), which was not found", display));
    else if (volatile_ones == candidates)
        note_effect(f, psprintf("calls volatile function %s()", display));
    else if (volatile_ones > 0)
        note_maybe(f, psprintf("may call volatile function %s()", display));
    else if (immutable_ones == 0 && f->stable_call == nullptr)
        f->stable_call = psprintf("%s()", display);
}

// Operators: only volatility counts (no built-in operator is volatile; user ones may be).
void note_operator(Facts *f, List *opname)
{
    char *schema;
    char *name;
    DeconstructQualifiedName(opname, &schema, &name);
    int candidates = 0, volatile_ones = 0;
    CatCList *list = SearchSysCacheList1(OPERNAMENSP, CStringGetDatum(name));
    for (int i = 0; i < list->n_members; i++) {
        Form_pg_operator op = (Form_pg_operator) GETSTRUCT(&list->members[i]->tuple);
        if (!OidIsValid(op->oprcode))
            continue;
        candidates++;
        if (func_volatile(op->oprcode) == PROVOLATILE_VOLATILE)
            volatile_ones++;
    }
    ReleaseSysCacheList(list);
    if (volatile_ones > 0 && volatile_ones == candidates)
        note_effect(f, psprintf("calls volatile operator %s", name));
    else if (volatile_ones > 0)
        note_maybe(f, psprintf("may call volatile operator %s", name));
}

const char *value_function_name(SQLValueFunctionOp op)
{
    switch (op) {
    case SVFOP_CURRENT_DATE:
        return "CURRENT_DATE";
    case SVFOP_CURRENT_TIME:
    case SVFOP_CURRENT_TIME_N:
        return "CURRENT_TIME";
    case SVFOP_CURRENT_TIMESTAMP:
    case SVFOP_CURRENT_TIMESTAMP_N:
        return "CURRENT_TIMESTAMP";
    case SVFOP_LOCALTIME:
    case SVFOP_LOCALTIME_N:
        return "LOCALTIME";
    case SVFOP_LOCALTIMESTAMP:
    case SVFOP_LOCALTIMESTAMP_N:
        return "LOCALTIMESTAMP";
    default:
        return "CURRENT_USER";
    }
}

// A table named in FROM (or JOIN, TABLESAMPLE): resolved for display when it exists.
void note_range_var(Facts *f, RangeVar *rv)
{
    if (rv->schemaname == nullptr) {
        ListCell *lc;
        foreach (lc, f->ctes) {
            if (strcmp((const char *) lfirst(lc), rv->relname) == 0)
                return;
        }
    }
    Oid relid = RangeVarGetRelid(rv, NoLock, true);
    if (OidIsValid(relid))
        note_read(f, relation_display(relid));
    else
        note_read(f, quote_qualified_identifier(rv->schemaname, rv->relname));
}

void note_ctes(Facts *f, WithClause *with)
{
    if (with == nullptr)
        return;
    ListCell *lc;
    foreach (lc, with->ctes)
        f->ctes = lappend(f->ctes, lfirst_node(CommonTableExpr, lc)->ctename);
}

void note_write(Facts *f, const char *verb, RangeVar *rv)
{
    Oid relid = RangeVarGetRelid(rv, NoLock, true);
    const char *name = OidIsValid(relid) ? relation_display(relid)
                                          : quote_qualified_identifier(rv->schemaname, rv->relname);
    note_effect(f, psprintf("writes: %s %s", verb, name));
}

bool raw_walker(Node *node, void *context)
{
    Facts *f = static_cast<Facts *>(context);
    if (node == nullptr)
        return false;
    if (f->effect != nullptr)
        return true;
    switch (nodeTag(node)) {
    case T_InsertStmt:
        note_write(f, "INSERT into", ((InsertStmt *) node)->relation);
        return true;
    case T_UpdateStmt:
        note_write(f, "UPDATE of", ((UpdateStmt *) node)->relation);
        return true;
    case T_DeleteStmt:
        note_write(f, "DELETE from", ((DeleteStmt *) node)->relation);
        return true;
    case T_MergeStmt:
        note_write(f, "MERGE into", ((MergeStmt *) node)->relation);
        return true;
    case T_SelectStmt: {
        SelectStmt *s = (SelectStmt *) node;
        if (s->lockingClause != NIL) {
            LockingClause *lc = linitial_node(LockingClause, s->lockingClause);
            note_effect(f, psprintf("locks rows: SELECT ... %s", lock_strength_name(lc->strength)));
            return true;
        }
        if (s->intoClause != nullptr) {
            note_effect(f, "creates a table: SELECT INTO");
            return true;
        }
        note_ctes(f, s->withClause);
        break;
    }
    case T_PLAssignStmt: {
        PLAssignStmt *a = (PLAssignStmt *) node;
        return raw_walker((Node *) a->indirection, f) || raw_walker((Node *) a->val, f);
    }
    case T_RangeVar:
        note_range_var(f, (RangeVar *) node);
        return false;
    case T_FuncCall:
        note_function_call(f, (FuncCall *) node);
        break;
    case T_A_Expr: {
        A_Expr *e = (A_Expr *) node;
        if (e->kind == AEXPR_OP || e->kind == AEXPR_OP_ANY || e->kind == AEXPR_OP_ALL)
            note_operator(f, e->name);
        break;
    }
    case T_SQLValueFunction:
        if (f->stable_call == nullptr)
            f->stable_call = value_function_name(((SQLValueFunction *) node)->op);
        return false;
    default:
        break;
    }
    if (f->effect != nullptr)
        return true;
    return raw_expression_tree_walker(node, ck::as_walker(raw_walker), f);
}

// One raw statement: DML and SELECT are walked; anything else is a utility statement.
void walk_raw_statement(Node *stmt, Facts *f)
{
    f->ctes = NIL;
    if (ck::reads_or_writes_rows(stmt))
        raw_walker(stmt, f);
    else
        note_effect(f, psprintf("runs utility statement %s", CreateCommandName(stmt)));
}

// The statement callbacks of the shared body walk: they stop it at the first certain effect.
bool on_statement(RawStmt *raw, const char *source, void *arg)
{
    Facts *f = static_cast<Facts *>(arg);
    walk_raw_statement(raw->stmt, f);
    return f->effect != nullptr;
}

bool on_effect(const char *what, void *arg)
{
    Facts *f = static_cast<Facts *>(arg);
    note_effect(f, what);
    return f->effect != nullptr;
}

bool on_maybe(const char *what, void *arg)
{
    Facts *f = static_cast<Facts *>(arg);
    note_maybe(f, what);
    return f->effect != nullptr;
}

ck::BodyWalk body_walk(Facts *f)
{
    return ck::BodyWalk{on_statement, on_effect, on_maybe, f, false};
}

/* ---------------------------------------------------------------------------------------
 * SQL functions
 * ------------------------------------------------------------------------------------- */

bool has_polymorphic_argument(Form_pg_proc proc)
{
    for (int i = 0; i < proc->pronargs; i++) {
        if (IsPolymorphicType(proc->proargtypes.values[i]))
            return true;
    }
    return false;
}

// The stored trees of BEGIN ATOMIC / RETURN bodies, read the way init_sql_fcache does.
void analyse_sql_body(Datum body, Facts *f)
{
    Node *n = (Node *) stringToNode(TextDatumGetCString(body));
    List *queries = IsA(n, List) ? linitial_node(List, castNode(List, n)) : list_make1(n);
    ListCell *lc;
    foreach (lc, queries) {
        Query *q = lfirst_node(Query, lc);
        AcquireRewriteLocks(q, true, false);
        walk_analysed(q, f);
        if (f->effect != nullptr)
            return;
    }
}

// A string body, statement by statement with the SQL-function parser hooks; a statement
// that is not DML is a side effect without analysing it (it may create what later ones use).
void analyse_sql_string(HeapTuple tup, Facts *f)
{
    Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(tup);
    bool isnull;
    Datum src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
    if (isnull)
        elog(ERROR, "null prosrc for function %u", proc->oid);
    char *source = TextDatumGetCString(src);
    if (has_polymorphic_argument(proc)) {
        ck::BodyWalk w = body_walk(f);
        ck::walk_raw_text(source, RAW_PARSE_DEFAULT, &w);
        return;
    }
    SQLFunctionParseInfoPtr pinfo = prepare_sql_fn_parse_info(tup, nullptr, InvalidOid);
    ListCell *lc;
    foreach (lc, pg_parse_query(source)) {
        RawStmt *raw = lfirst_node(RawStmt, lc);
        switch (nodeTag(raw->stmt)) {
        case T_SelectStmt:
        case T_InsertStmt:
        case T_UpdateStmt:
        case T_DeleteStmt:
        case T_MergeStmt:
            break;
        default:
            note_effect(f, psprintf("runs utility statement %s", CreateCommandName(raw->stmt)));
            return;
        }
        Query *q = parse_analyze_withcb(raw, source, (ParserSetupHook) sql_fn_parser_setup, pinfo, nullptr);
        walk_analysed(q, f);
        if (f->effect != nullptr)
            return;
    }
}

/* ---------------------------------------------------------------------------------------
 * The verdict
 * ------------------------------------------------------------------------------------- */

const char *join_reads(List *reads)
{
    StringInfoData buf;
    initStringInfo(&buf);
    ListCell *lc;
    foreach (lc, reads) {
        if (buf.len > 0)
            appendStringInfoString(&buf, ", ");
        appendStringInfoString(&buf, (const char *) lfirst(lc));
    }
    return buf.data;
}

Verdict report(MemoryContext out, const char *suggested, const char *reason)
{
    return Verdict{true, MemoryContextStrdup(out, suggested), MemoryContextStrdup(out, reason)};
}

Verdict judge(char declared, const Facts &f, MemoryContext out)
{
    // A certain side effect: neither IMMUTABLE nor STABLE can be right.
    if (declared != PROVOLATILE_VOLATILE && f.effect != nullptr)
        return report(out, "VOLATILE", f.effect);
    if (declared == PROVOLATILE_IMMUTABLE) {
        if (f.reads != NIL)
            return report(out, "STABLE",
                          psprintf("reads %s %s", list_length(f.reads) > 1 ? "tables" : "table",
                                   join_reads(f.reads)));
        if (f.stable_call != nullptr)
            return report(out, "STABLE", psprintf("calls stable function %s", f.stable_call));
    }
    // Only reads: no write, no volatile call, no dynamic SQL, nothing unresolved.
    if (declared == PROVOLATILE_VOLATILE && f.effect == nullptr && f.maybe == nullptr && f.reads != NIL)
        return report(out, "STABLE", psprintf("only reads (SELECT on %s)", join_reads(f.reads)));
    return Verdict{false, nullptr, nullptr};
}

// Where the verdict of one function goes (its strings in `out`).
struct Audit {
    Verdict verdict;
    MemoryContext out;
};

// Runs inside the subtransaction; every allocation but the verdict's strings is thrown away.
void analyse(const ck::AuditCandidate &c, HeapTuple tup, void *arg)
{
    Audit *a = static_cast<Audit *>(arg);
    Facts f{};
    if (c.is_sql) {
        bool isnull;
        Datum body = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosqlbody, &isnull);
        if (!isnull)
            analyse_sql_body(body, &f);
        else
            analyse_sql_string(tup, &f);
    } else {
        ck::BodyWalk w = body_walk(&f);
        ck::walk_plpgsql_body(c.fn, &w);
    }
    a->verdict = judge(c.declared, f, a->out);
}

const char *volatility_name(char v)
{
    return v == PROVOLATILE_IMMUTABLE ? "IMMUTABLE" : v == PROVOLATILE_STABLE ? "STABLE" : "VOLATILE";
}

// One row for a function whose label is wrong or that could not be analysed.
void report(const ck::AuditCandidate &c, const char *error, void *arg, ReturnSetInfo *rsinfo)
{
    Audit *a = static_cast<Audit *>(arg);
    Verdict v = error != nullptr ? Verdict{true, nullptr, error} : a->verdict;
    a->verdict = Verdict{false, nullptr, nullptr};
    if (!v.report)
        return;
    Datum values[4] = {ObjectIdGetDatum(c.fn), CStringGetTextDatum(volatility_name(c.declared)),
                       v.suggested ? CStringGetTextDatum(v.suggested) : (Datum) 0, CStringGetTextDatum(v.reason)};
    bool nulls[4] = {false, false, v.suggested == nullptr, false};
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

} // namespace

CK_FUNCTION(ck_volatility_audit)
{
    Audit a{Verdict{false, nullptr, nullptr}, CurrentMemoryContext};
    ck::run_audit(fcinfo, analyse, report, &a);
    return (Datum) 0;
}
