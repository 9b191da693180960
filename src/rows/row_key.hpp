// One row addressed by its key argument: its type and the messages of the raising forms.
#pragma once

#include "base/plan_cache.hpp"
#include "base/relation.hpp"

#include <string>

namespace ck {

// A kept plan about one row of table, with what its messages name: column and key.
// key_type is the type its key parameter takes.
Prepared row_plan(SPIPlanPtr plan, const TableRef &table, const ColumnRef &column, const ColumnRef &key,
                  Oid key_type);

// The type a plan's key parameter takes for a key argument (declared "any") of type arg_type:
// an unknown literal ('A1'), or a string (text, varchar) for a key column of another kind, is
// read as the key column's type (as_array: its array type, for '{A1,B2}'); any other type is
// passed as it is and matched by key_match_sql (or refused there with 42804). Inside pg_call.
Oid key_param_type(const ColumnRef &key, Oid arg_type, bool as_array = false);

// A key argument key_param_type chose to read as the type p's plan takes, read so with that
// type's input function (22P02 and the like when it is not one); other keys are left as they are.
void resolve_key(const Prepared &p, Datum *key, Oid *key_type);

// The key as text, for messages.
std::string key_text(Datum key, Oid key_type);

// CK004 "<table> <key>: no such row", DETAIL naming the key column, HINT naming the try_ form
// of the raising call.
[[noreturn]] void raise_no_such_row(const Prepared &p, const std::string &key, const char *hint);

} // namespace ck
