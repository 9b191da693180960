// The facts of one body that ck.race_audit judges: its unlocked reads and the names their
// results go into, its writes, and the statements that lock or commit. race_facts.cpp gathers
// them, race_rules.cpp turns them into findings. Plain C over palloc'd data, made inside the
// audit's pg_call, like the walk of function_bodies.
#pragma once

#include "audits/function_bodies.hpp"

// A namespace of its own: Read, Write and Facts are names other audits use too.
namespace ck::race_audit {

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

// An UPDATE of a table or an INSERT into it.
struct Write {
    int stmt;
    Oid relid;
    bool insert;
    bool on_conflict;
    List *guard; // int: attributes of relid its WHERE compares, sub-selects left out
    List *sets;  // SetItem *
};

// What the walk found in one body (ctes, pending and current are the walk's own state).
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

// Is name (not nullptr) one of names (char *)?
bool names_contain(List *names, const char *name);

// Walks the body of c (a SQL or PL/pgSQL function or procedure; tup is its pg_proc row) into f.
void gather_facts(const AuditCandidate &c, HeapTuple tup, Facts *f);

} // namespace ck::race_audit
