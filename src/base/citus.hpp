// Citus, seen from the catalog: is a relation a Citus table, of which kind, distributed by which column. Read from
// Citus's metadata table pg_catalog.pg_dist_partition by name, so the module neither links to Citus nor needs it:
// without the citus extension every relation is CitusKind::none. And whether Citus's distributed deadlock detector
// cancelled this backend, asked through Citus's error-report hook.
#pragma once

#include "base/pg.hpp"

namespace ck {

enum class CitusKind {
    none,          // not a Citus table (or no Citus)
    distributed,   // rows spread over shards by a distribution column (hash; the legacy range and append too)
    reference,     // one shard, a copy on every node (writes go to every copy, 2PC)
    single_shard,  // one shard on one node: a Citus local table or a table distributed without a column
};

struct CitusTable {
    CitusKind kind;
    AttrNumber column;   // the distribution column of a distributed table; InvalidAttrNumber otherwise
};

// Whether the citus extension is installed in this database. Inside pg_call.
bool citus_installed();

// The Citus kind of the relation relid. Raises PostgreSQL errors: call inside pg_call.
CitusTable citus_table(Oid relid);

// After a caught 57014: did Citus's distributed deadlock detector cancel this backend's transaction? (Citus turns
// the 57014 into 40P01 only when the error is reported, too late for a caller that catches it.) Clears Citus's
// mark. False without Citus loaded; call before the transaction is rolled back, which clears the mark too.
bool citus_cancelled_for_deadlock();

// From _PG_init: notes Citus's error-report hook if Citus set it last before this library loaded
// (shared_preload_libraries = 'citus,concurrency_kit'), for citus_cancelled_for_deadlock.
void citus_note_log_hook();

} // namespace ck
