// Citus, seen from the catalog: is a relation a Citus table, of which kind, distributed by which column. Read from
// Citus's metadata table pg_catalog.pg_dist_partition by name, so the module neither links to Citus nor needs it:
// without the citus extension every relation is CitusKind::none.
#pragma once

#include "pg.hpp"

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

// The Citus kind of the relation relid. Raises PostgreSQL errors: call inside pg_call.
CitusTable citus_table(Oid relid);

} // namespace ck
