// What an overlap guard is about: a table, its range (or multirange) column and the key
// columns that must be equal for two rows to conflict. Shared by the DDL generator, the
// overlap audit and ck.add_overlap_guard.
#pragma once

#include "base/relation.hpp"

namespace ck {

constexpr int max_guard_keys = 32;

struct OverlapTarget {
    TableRef table;
    ColumnRef range;
    bool multirange;
    int nkeys;
    ColumnRef keys[max_guard_keys];
    bool needs_btree_gist;   // a scalar key has no GiST operator class until btree_gist is installed
    bool citus;               // a Citus table (citus_overlap_key): its DDL adds each constraint by its own ALTER TABLE
    const char *citus_column; // the Citus distribution column citus_overlap_key added to the keys, or NULL
};

// Validates (tbl, range_col, key_cols) from arguments 0, 1 and 2 against the catalog.
OverlapTarget overlap_target(FunctionCallInfo fcinfo);

// Notes a Citus table. On a table Citus distributes, the guard must compare the distribution column with = (Citus
// enforces the constraint shard by shard): adds it to the keys with a NOTICE when missing; 0A000 when it is the
// range column.
void citus_overlap_key(OverlapTarget &t);

} // namespace ck
