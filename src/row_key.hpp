// What the raising forms of the one-row functions say about the row they address.
#pragma once

#include "plan_cache.hpp"
#include "relation.hpp"

#include <string>

namespace ck {

// A kept plan about one row of table, with what its messages name: column and key.
Prepared row_plan(SPIPlanPtr plan, const TableRef &table, const ColumnRef &column, const ColumnRef &key,
                  Oid key_type);

// The key as text, for messages.
std::string key_text(Datum key, Oid key_type);

// CK004 "<table> <key>: no such row", DETAIL naming the key column.
[[noreturn]] void raise_no_such_row(const Prepared &p, const std::string &key);

} // namespace ck
