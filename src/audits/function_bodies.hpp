// What the function audits (ck.volatility_audit, ck.lock_audit, ck.race_audit) share: the functions in
// scope, the per-function subtransaction that is always rolled back, and the walk that
// yields every raw statement of a PL/pgSQL or SQL body.
//
// The walks are plain C over palloc'd data: they run inside the analyse callback, itself
// inside one pg_call, and own no C++ object.
#pragma once

#include "base/pg.hpp"
#include "base/tree_walker.hpp"

#include <vector>

extern "C" {
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "access/htup.h"
}

namespace ck {

// A SQL or PL/pgSQL function in scope of an audit.
struct AuditCandidate {
    Oid fn;
    char declared; // provolatile
    bool is_sql;   // else PL/pgSQL
};

// Runs inside the function's own subtransaction, always rolled back, with its search path set;
// tup is its pg_proc row. An error is reported as "could not analyse: ..." (errors of the
// classes that must stop the audit are rethrown).
using AnalyseFn = void (*)(const AuditCandidate &c, HeapTuple tup, void *arg);

// Puts the rows of one audited function into the result set, then readies arg for the next;
// error is audit_function's. Runs inside pg_call.
using ReportFn = void (*)(const AuditCandidate &c, const char *error, void *arg, ReturnSetInfo *rsinfo);

// An audit call (schema name as argument 0, NULL for all): every function in scope is analysed
// by audit_function, then reported. Allocations that must outlive the analysis go to the
// context current at the call (the result set's rows are copied in any case). With
// FunctionsAndProcedures, SQL and PL/pgSQL procedures are in scope too.
enum AuditScope { FunctionsOnly, FunctionsAndProcedures };
void run_audit(FunctionCallInfo fcinfo, AnalyseFn analyse, ReportFn report, void *arg,
               AuditScope scope = FunctionsOnly);

// Callbacks of a body walk; each returns true to stop the walk.
struct BodyWalk {
    // One raw statement; source is the text that raw's location and length refer to.
    bool (*statement)(RawStmt *raw, const char *source, void *arg);
    // Something that is no SQL statement and certainly has effects (PL/pgSQL COMMIT, ROLLBACK).
    bool (*effect)(const char *what, void *arg);
    // Something that cannot be analysed (dynamic SQL, an unknown PL/pgSQL statement).
    bool (*maybe)(const char *what, void *arg);
    void *arg;
    bool stopped;
    // Optional (nullptr: not called). The names a PL/pgSQL statement stores its result in,
    // called just before that statement: the INTO targets of a SQL statement (a row's fields,
    // a record's name) and the loop variable of FOR ... IN query.
    void (*targets)(List *names, void *arg);
};

// A raw statement's own text on one line (base/statement_text.hpp), palloc'd whole.
char *statement_text(RawStmt *raw, const char *source);

// SELECT, INSERT, UPDATE, DELETE, MERGE or a PL/pgSQL assignment: the raw statements that read
// or write rows; anything else is a utility statement.
bool reads_or_writes_rows(Node *stmt);

// Every raw statement of a text.
void walk_raw_text(const char *sql, RawParseMode mode, BodyWalk *w);

// A PL/pgSQL function, compiled by PL/pgSQL itself: declared defaults, bound cursor queries,
// then every statement of the body.
void walk_plpgsql_body(Oid fn, BodyWalk *w);

// A SQL function: its string body, or its BEGIN ATOMIC / RETURN body as PostgreSQL deparses it
// (with the search path in force, as set by audit_function).
void walk_sql_body(HeapTuple tup, BodyWalk *w);

} // namespace ck
