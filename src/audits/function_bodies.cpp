// The shared parts of the function audits: see function_bodies.hpp.
#include "audits/function_bodies.hpp"
#include "base/boundary.hpp"
#include "base/qualify.hpp"
#include "base/spi.hpp"
#include "base/statement_text.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "parser/parser.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "plpgsql.h"
}

namespace {

using ck::BodyWalk;

/* ---------------------------------------------------------------------------------------
 * PL/pgSQL
 * ------------------------------------------------------------------------------------- */

void walk_expr(PLpgSQL_expr *expr, BodyWalk *w)
{
    if (expr != nullptr && !w->stopped)
        ck::walk_raw_text(expr->query, expr->parseMode, w);
}

void walk_exprs(List *exprs, BodyWalk *w)
{
    ListCell *lc;
    foreach (lc, exprs)
        walk_expr((PLpgSQL_expr *) lfirst(lc), w);
}

void note_effect(BodyWalk *w, const char *what)
{
    if (w->effect(what, w->arg))
        w->stopped = true;
}

void note_maybe(BodyWalk *w, const char *what)
{
    if (w->maybe(what, w->arg))
        w->stopped = true;
}

// The names a statement stores its result in, to the optional targets callback: a row's
// fields (INTO a, b makes a row of them), a record's own name.
void note_targets(PLpgSQL_variable *target, BodyWalk *w)
{
    if (target == nullptr || w->targets == nullptr || w->stopped)
        return;
    List *names = NIL;
    if (target->dtype == PLPGSQL_DTYPE_ROW) {
        auto *row = (PLpgSQL_row *) target;
        for (int i = 0; i < row->nfields; i++) {
            if (row->fieldnames[i] != nullptr)
                names = lappend(names, row->fieldnames[i]);
        }
    } else {
        names = lappend(names, target->refname);
    }
    w->targets(names, w->arg);
}

// EXECUTE and friends: the statement text is only known at run time.
void walk_dynamic(PLpgSQL_expr *query, List *params, const char *what, BodyWalk *w)
{
    note_maybe(w, psprintf("runs dynamic SQL (%s) that cannot be analysed", what));
    walk_expr(query, w);
    walk_exprs(params, w);
}

void walk_stmts(List *stmts, BodyWalk *w);

void walk_stmt(PLpgSQL_stmt *stmt, BodyWalk *w)
{
    ListCell *lc;
    switch (stmt->cmd_type) {
    case PLPGSQL_STMT_BLOCK: {
        auto *s = (PLpgSQL_stmt_block *) stmt;
        walk_stmts(s->body, w);
        if (s->exceptions != nullptr) {
            foreach (lc, s->exceptions->exc_list)
                walk_stmts(((PLpgSQL_exception *) lfirst(lc))->action, w);
        }
        break;
    }
    case PLPGSQL_STMT_ASSIGN:
        walk_expr(((PLpgSQL_stmt_assign *) stmt)->expr, w);
        break;
    case PLPGSQL_STMT_IF: {
        auto *s = (PLpgSQL_stmt_if *) stmt;
        walk_expr(s->cond, w);
        walk_stmts(s->then_body, w);
        foreach (lc, s->elsif_list) {
            auto *e = (PLpgSQL_if_elsif *) lfirst(lc);
            walk_expr(e->cond, w);
            walk_stmts(e->stmts, w);
        }
        walk_stmts(s->else_body, w);
        break;
    }
    case PLPGSQL_STMT_CASE: {
        auto *s = (PLpgSQL_stmt_case *) stmt;
        walk_expr(s->t_expr, w);
        foreach (lc, s->case_when_list) {
            auto *c = (PLpgSQL_case_when *) lfirst(lc);
            walk_expr(c->expr, w);
            walk_stmts(c->stmts, w);
        }
        walk_stmts(s->else_stmts, w);
        break;
    }
    case PLPGSQL_STMT_LOOP:
        walk_stmts(((PLpgSQL_stmt_loop *) stmt)->body, w);
        break;
    case PLPGSQL_STMT_WHILE: {
        auto *s = (PLpgSQL_stmt_while *) stmt;
        walk_expr(s->cond, w);
        walk_stmts(s->body, w);
        break;
    }
    case PLPGSQL_STMT_FORI: {
        auto *s = (PLpgSQL_stmt_fori *) stmt;
        walk_expr(s->lower, w);
        walk_expr(s->upper, w);
        walk_expr(s->step, w);
        walk_stmts(s->body, w);
        break;
    }
    case PLPGSQL_STMT_FORS: {
        auto *s = (PLpgSQL_stmt_fors *) stmt;
        note_targets(s->var, w);
        walk_expr(s->query, w);
        walk_stmts(s->body, w);
        break;
    }
    case PLPGSQL_STMT_FORC: {
        // The cursor's own query is a datum (walked with the other datums).
        auto *s = (PLpgSQL_stmt_forc *) stmt;
        walk_expr(s->argquery, w);
        walk_stmts(s->body, w);
        break;
    }
    case PLPGSQL_STMT_FOREACH_A: {
        auto *s = (PLpgSQL_stmt_foreach_a *) stmt;
        walk_expr(s->expr, w);
        walk_stmts(s->body, w);
        break;
    }
    case PLPGSQL_STMT_EXIT:
        walk_expr(((PLpgSQL_stmt_exit *) stmt)->cond, w);
        break;
    case PLPGSQL_STMT_RETURN:
        walk_expr(((PLpgSQL_stmt_return *) stmt)->expr, w);
        break;
    case PLPGSQL_STMT_RETURN_NEXT:
        walk_expr(((PLpgSQL_stmt_return_next *) stmt)->expr, w);
        break;
    case PLPGSQL_STMT_RETURN_QUERY: {
        auto *s = (PLpgSQL_stmt_return_query *) stmt;
        walk_expr(s->query, w);
        if (s->dynquery != nullptr)
            walk_dynamic(s->dynquery, s->params, "RETURN QUERY EXECUTE", w);
        break;
    }
    case PLPGSQL_STMT_RAISE: {
        // RAISE (any level) only reports; its arguments are still expressions to check.
        auto *s = (PLpgSQL_stmt_raise *) stmt;
        walk_exprs(s->params, w);
        foreach (lc, s->options)
            walk_expr(((PLpgSQL_raise_option *) lfirst(lc))->expr, w);
        break;
    }
    case PLPGSQL_STMT_ASSERT: {
        auto *s = (PLpgSQL_stmt_assert *) stmt;
        walk_expr(s->cond, w);
        walk_expr(s->message, w);
        break;
    }
    case PLPGSQL_STMT_EXECSQL: {
        auto *s = (PLpgSQL_stmt_execsql *) stmt;
        if (s->into)
            note_targets(s->target, w);
        walk_expr(s->sqlstmt, w);
        break;
    }
    case PLPGSQL_STMT_DYNEXECUTE: {
        auto *s = (PLpgSQL_stmt_dynexecute *) stmt;
        walk_dynamic(s->query, s->params, "EXECUTE", w);
        break;
    }
    case PLPGSQL_STMT_DYNFORS: {
        auto *s = (PLpgSQL_stmt_dynfors *) stmt;
        walk_dynamic(s->query, s->params, "FOR ... IN EXECUTE", w);
        walk_stmts(s->body, w);
        break;
    }
    case PLPGSQL_STMT_OPEN: {
        auto *s = (PLpgSQL_stmt_open *) stmt;
        walk_expr(s->argquery, w);
        walk_expr(s->query, w);
        if (s->dynquery != nullptr)
            walk_dynamic(s->dynquery, s->params, "OPEN ... FOR EXECUTE", w);
        break;
    }
    case PLPGSQL_STMT_FETCH:
        walk_expr(((PLpgSQL_stmt_fetch *) stmt)->expr, w);
        break;
    case PLPGSQL_STMT_PERFORM:
        walk_expr(((PLpgSQL_stmt_perform *) stmt)->expr, w);
        break;
    case PLPGSQL_STMT_CALL:
        // CALL or DO: a utility statement, which the statement callback sees as such.
        walk_expr(((PLpgSQL_stmt_call *) stmt)->expr, w);
        break;
    case PLPGSQL_STMT_COMMIT:
        note_effect(w, "ends the transaction: COMMIT");
        break;
    case PLPGSQL_STMT_ROLLBACK:
        note_effect(w, "ends the transaction: ROLLBACK");
        break;
    case PLPGSQL_STMT_GETDIAG:
    case PLPGSQL_STMT_CLOSE:
        break;
    default:
        note_maybe(w, psprintf("has a PL/pgSQL statement of unknown kind %d", (int) stmt->cmd_type));
        break;
    }
}

void walk_stmts(List *stmts, BodyWalk *w)
{
    ListCell *lc;
    foreach (lc, stmts) {
        if (w->stopped)
            return;
        walk_stmt((PLpgSQL_stmt *) lfirst(lc), w);
    }
}

using CompileFn = PLpgSQL_function *(*) (FunctionCallInfo, bool);

/* ---------------------------------------------------------------------------------------
 * The driver
 * ------------------------------------------------------------------------------------- */

// The function's own SET search_path when it has one, else its schema then the session's
// default path: unqualified names then resolve as they would for a typical caller.
void set_analysis_search_path(HeapTuple tup)
{
    Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(tup);
    const char *path = nullptr;
    bool isnull;
    Datum config = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proconfig, &isnull);
    if (!isnull) {
        Datum *items;
        bool *nulls;
        int n;
        deconstruct_array(DatumGetArrayTypeP(config), TEXTOID, -1, false, TYPALIGN_INT, &items, &nulls, &n);
        for (int i = 0; i < n; i++) {
            char *item = TextDatumGetCString(items[i]);
            if (strncmp(item, "search_path=", 12) == 0)
                path = item + 12;
        }
    }
    if (path == nullptr) {
        char *nsp = get_namespace_name(proc->pronamespace);
        const char *reset = GetConfigOptionResetString("search_path");
        path = psprintf("%s%s%s", quote_identifier(nsp), reset[0] ? ", " : "", reset);
    }
    NewGUCNestLevel(); // popped by the subtransaction's rollback
    set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

// Runs inside the subtransaction.
void analyse(const ck::AuditCandidate &c, ck::AnalyseFn fn, void *arg)
{
    HeapTuple tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(c.fn));
    if (!HeapTupleIsValid(tup))
        return; // dropped since it was listed
    set_analysis_search_path(tup);
    fn(c, tup, arg);
    ReleaseSysCache(tup);
}

// Errors that must stop the audit rather than become "could not analyse".
bool must_propagate(const ErrorData *e)
{
    int category = ERRCODE_TO_CATEGORY(e->sqlerrcode);
    return category == ERRCODE_TO_CATEGORY(ERRCODE_OPERATOR_INTERVENTION) ||
           category == ERRCODE_TO_CATEGORY(ERRCODE_INSUFFICIENT_RESOURCES) ||
           category == ERRCODE_TO_CATEGORY(ERRCODE_SYSTEM_ERROR);
}

#define EQ CK_OP("=")
const char *const ListSql =
    "SELECT p.oid, p.provolatile, l.lanname" EQ "'sql'::pg_catalog.name"
    "  FROM pg_catalog.pg_proc p"
    "  JOIN pg_catalog.pg_namespace n ON n.oid" EQ "p.pronamespace"
    "  JOIN pg_catalog.pg_language l ON l.oid" EQ "p.prolang"
    " WHERE (p.prokind" EQ "'f'::pg_catalog.\"char\" OR ($2 AND p.prokind" EQ "'p'::pg_catalog.\"char\"))"
    "   AND l.lanname" EQ "ANY ('{sql,plpgsql}'::pg_catalog.name[])"
    "   AND NOT p.prorettype" EQ "ANY ('{pg_catalog.trigger,pg_catalog.event_trigger}'::pg_catalog.regtype[])"
    "   AND CASE WHEN $1 IS NOT NULL THEN n.oid" EQ "$1"
    "       ELSE NOT n.nspname" EQ "ANY ('{pg_catalog,information_schema,pg_toast,ck}'::pg_catalog.name[])"
    "        AND n.nspname" CK_OP("!~") "'^pg_(toast_)?temp_'::pg_catalog.text"
    "        AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d"
    "                         WHERE d.classid" EQ "'pg_catalog.pg_proc'::pg_catalog.regclass"
    "                           AND d.objid" EQ "p.oid AND d.deptype" EQ "'e'::pg_catalog.\"char\") END"
    " ORDER BY n.nspname, p.proname, p.oid";
#undef EQ

} // namespace

namespace ck {

char *statement_text(RawStmt *raw, const char *source)
{
    size_t size = (raw->stmt_len > 0 ? static_cast<size_t>(raw->stmt_len) : strlen(source + raw->stmt_location)) + 1;
    char *text = static_cast<char *>(palloc(size));
    statement_text(text, size, source, raw->stmt_location, raw->stmt_len);
    return text;
}

bool reads_or_writes_rows(Node *stmt)
{
    switch (nodeTag(stmt)) {
    case T_SelectStmt:
    case T_InsertStmt:
    case T_UpdateStmt:
    case T_DeleteStmt:
    case T_MergeStmt:
    case T_PLAssignStmt:
        return true;
    default:
        return false;
    }
}

void walk_raw_text(const char *sql, RawParseMode mode, BodyWalk *w)
{
    if (w->stopped)
        return;
    ListCell *lc;
    foreach (lc, raw_parser(sql, mode)) {
        if (w->statement(lfirst_node(RawStmt, lc), sql, w->arg)) {
            w->stopped = true;
            return;
        }
    }
}

// Compiled by PL/pgSQL itself, as plpgsql_validator does (forValidator resolves
// polymorphic arguments to placeholder types); trigger functions are never passed here.
void walk_plpgsql_body(Oid fn, BodyWalk *w)
{
    static CompileFn compile = nullptr;
    if (compile == nullptr)
        compile = (CompileFn) load_external_function("$libdir/plpgsql", "plpgsql_compile", true, nullptr);
    LOCAL_FCINFO(fake, 0);
    FmgrInfo flinfo;
    MemSet(fake, 0, SizeForFunctionCallInfo(0));
    MemSet(&flinfo, 0, sizeof(flinfo));
    fake->flinfo = &flinfo;
    flinfo.fn_oid = fn;
    flinfo.fn_mcxt = CurrentMemoryContext;
    PLpgSQL_function *func = compile(fake, true);

    // Declared defaults and bound cursor queries are statements too.
    for (int i = 0; i < func->ndatums && !w->stopped; i++) {
        PLpgSQL_datum *d = func->datums[i];
        if (d->dtype == PLPGSQL_DTYPE_VAR || d->dtype == PLPGSQL_DTYPE_PROMISE) {
            auto *var = (PLpgSQL_var *) d;
            walk_expr(var->default_val, w);
            walk_expr(var->cursor_explicit_expr, w);
        } else if (d->dtype == PLPGSQL_DTYPE_REC) {
            walk_expr(((PLpgSQL_rec *) d)->default_val, w);
        }
    }
    if (!w->stopped)
        walk_stmt((PLpgSQL_stmt *) func->action, w);
}

void walk_sql_body(HeapTuple tup, BodyWalk *w)
{
    Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(tup);
    bool isnull;
    SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosqlbody, &isnull);
    if (isnull) {
        Datum src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
        if (isnull)
            elog(ERROR, "null prosrc for function %u", proc->oid);
        walk_raw_text(TextDatumGetCString(src), RAW_PARSE_DEFAULT, w);
        return;
    }
    // "BEGIN ATOMIC\n stmt;\n ...\nEND" or "RETURN expr", names qualified as the current
    // search path needs: the statements in between parse again as a multi-statement text.
    char *body = TextDatumGetCString(DirectFunctionCall1(pg_get_function_sqlbody, ObjectIdGetDatum(proc->oid)));
    const char *atomic = "BEGIN ATOMIC";
    size_t len = strlen(body);
    if (strncmp(body, atomic, strlen(atomic)) == 0 && len >= strlen(atomic) + 3 &&
        strcmp(body + len - 3, "END") == 0) {
        body[len - 3] = '\0';
        walk_raw_text(body + strlen(atomic), RAW_PARSE_DEFAULT, w);
    } else if (strncmp(body, "RETURN ", 7) == 0) {
        walk_raw_text(psprintf("SELECT %s", body + 7), RAW_PARSE_DEFAULT, w);
    } else {
        elog(ERROR, "unexpected SQL body of function %u", proc->oid);
    }
}

namespace {

// The audit's schema argument (argument 0): InvalidOid when NULL; 3F000 when it does not exist.
Oid audit_schema(FunctionCallInfo fcinfo)
{
    if (PG_ARGISNULL(0))
        return InvalidOid;
    const char *name = NameStr(*PG_GETARG_NAME(0));
    return pg_call([&] { return get_namespace_oid(name, false); });
}

// SQL and PL/pgSQL functions in scope (and procedures, if asked), trigger functions excluded. Without a schema:
// every schema but the system ones and ck, and no function that belongs to an extension.
std::vector<AuditCandidate> list_audit_candidates(Oid nsp, AuditScope scope)
{
    std::vector<AuditCandidate> out;
    spi_connect();
    Oid types[2] = {OIDOID, BOOLOID};
    Datum values[2] = {ObjectIdGetDatum(nsp), BoolGetDatum(scope == FunctionsAndProcedures)};
    const char nulls[3] = {OidIsValid(nsp) ? ' ' : 'n', ' ', '\0'};
    uint64 n = pg_call([&] {
        if (SPI_execute_with_args(ListSql, 2, types, values, nulls, true, 0) != SPI_OK_SELECT)
            elog(ERROR, "could not list functions");
        return SPI_processed;
    });
    for (uint64 i = 0; i < n; i++) {
        bool isnull;
        AuditCandidate c;
        c.fn = DatumGetObjectId(result_datum(i, 1, &isnull));
        c.declared = DatumGetChar(result_datum(i, 2, &isnull));
        c.is_sql = DatumGetBool(result_datum(i, 3, &isnull));
        out.push_back(c);
    }
    spi_finish();
    return out;
}

// One function in its own subtransaction, rolled back whether or not analysis succeeded;
// allocations go to `work` (reset afterwards). Returns nullptr when analyse ran to the end
// (or the function was dropped since it was listed), else "could not analyse: ..." in `out`.
// Errors of the classes that must stop the audit (operator intervention, resources, system)
// are rethrown.
const char *audit_function(const AuditCandidate &c, AnalyseFn fn, void *arg, MemoryContext out,
                           MemoryContext work)
{
    ResourceOwner owner = CurrentResourceOwner;
    pg_call([&] {
        BeginInternalSubTransaction(nullptr);
        MemoryContextSwitchTo(work);
    });
    ErrorData *error = nullptr;
    try {
        pg_call([&] { analyse(c, fn, arg); });
    } catch (const PgError &e) {
        error = e.data();
    }
    bool propagate = error != nullptr && must_propagate(error);
    const char *message = nullptr;
    pg_call([&] {
        if (error != nullptr && !propagate)
            message = MemoryContextStrdup(out, psprintf("could not analyse: %s", error->message));
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(out);
        CurrentResourceOwner = owner;
    });
    if (propagate)
        throw PgError(error); // still in `work`, which lives until the call ends
    pg_call([&] { MemoryContextReset(work); });
    return message;
}

} // namespace

void run_audit(FunctionCallInfo fcinfo, AnalyseFn analyse, ReportFn report, void *arg, AuditScope scope)
{
    Oid nsp = audit_schema(fcinfo);
    ReturnSetInfo *rsinfo = pg_call([&] { return begin_result_set(fcinfo); });
    std::vector<AuditCandidate> candidates = list_audit_candidates(nsp, scope);
    MemoryContext out = CurrentMemoryContext;
    MemoryContext work = pg_call([&] { return AllocSetContextCreate(out, "ck audit", ALLOCSET_DEFAULT_SIZES); });
    for (const AuditCandidate &c : candidates) {
        const char *error = audit_function(c, analyse, arg, out, work);
        pg_call([&] { report(c, error, arg, rsinfo); });
    }
    pg_call([&] { MemoryContextDelete(work); });
}

} // namespace ck
