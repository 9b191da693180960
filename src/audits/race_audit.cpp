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
// The facts of a body are gathered in race_facts.cpp and judged in race_rules.cpp; the
// candidates, the per-function subtransaction (always rolled back) and the walk over every raw
// statement of a body are shared with the other audits (function_bodies.cpp). All of it is
// plain C over palloc'd data inside one pg_call per function.
#include "base/boundary.hpp"
#include "audits/race_rules.hpp"

extern "C" {
#include "catalog/pg_proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
}

namespace {

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
    ck::race_audit::Facts f{};
    ck::race_audit::gather_facts(c, tup, &f);
    if (f.serializable)
        return;
    ListCell *lw;
    foreach (lw, f.writes) {
        const ck::race_audit::Write *wr = (const ck::race_audit::Write *) lfirst(lw);
        ck::race_audit::Finding found;
        if (ck::race_audit::find_race(&f, wr, &found))
            add_row(a, Row{found.kind, (const char *) list_nth(f.stmts, found.read->stmt),
                           (const char *) list_nth(f.stmts, wr->stmt), found.rule, found.fix});
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
