// What the function audits (ck.volatility_audit, ck.lock_audit) share: the functions in
// scope, the per-function subtransaction that is always rolled back, and the walk that
// yields every raw statement of a PL/pgSQL or SQL body.
//
// The walks are plain C over palloc'd data: they run inside the analyse callback, itself
// inside one pg_call, and own no C++ object.
#pragma once

#include "pg.hpp"

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

// The audit's schema argument (argument 0): InvalidOid when NULL; 3F000 when it does not exist.
Oid audit_schema(FunctionCallInfo fcinfo);

// SQL and PL/pgSQL functions in scope, trigger functions excluded. Without a schema:
// every schema but the system ones and ck, and no function that belongs to an extension.
std::vector<AuditCandidate> list_audit_candidates(Oid nsp);

// Runs inside the subtransaction with the function's search path set; tup is its pg_proc row.
using AnalyseFn = void (*)(const AuditCandidate &c, HeapTuple tup, void *arg);

// One function in its own subtransaction, rolled back whether or not analysis succeeded;
// allocations go to `work` (reset afterwards). Returns nullptr when analyse ran to the end
// (or the function was dropped since it was listed), else "could not analyse: ..." in `out`.
// Errors of the classes that must stop the audit (operator intervention, resources, system)
// are rethrown.
const char *audit_function(const AuditCandidate &c, AnalyseFn analyse, void *arg, MemoryContext out,
                           MemoryContext work);

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
};

// Every raw statement of a text.
void walk_raw_text(const char *sql, RawParseMode mode, BodyWalk *w);

// A PL/pgSQL function, compiled by PL/pgSQL itself: declared defaults, bound cursor queries,
// then every statement of the body.
void walk_plpgsql_body(Oid fn, BodyWalk *w);

// A SQL function: its string body, or its BEGIN ATOMIC / RETURN body as PostgreSQL deparses it
// (with the search path in force, as set by audit_function).
void walk_sql_body(HeapTuple tup, BodyWalk *w);

#if PG_VERSION_NUM >= 160000
// Since 16 the tree walkers are macros that cast to tree_walker_callback, which is already
// the walkers' own type: pass them through unchanged.
inline tree_walker_callback as_walker(tree_walker_callback fn)
{
    return fn;
}
#else
// Before 16 the tree walkers take an unprototyped function pointer (C's "bool (*)()");
// going through void (*)() says the conversion is intended.
inline bool (*as_walker(bool (*fn)(Node *, void *)))()
{
    return reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(fn));
}
#endif

} // namespace ck
