// Catalog look-ups that validate a caller's table and column arguments. They raise
// PostgreSQL errors directly, so call them only inside pg_call (they own no C++ objects).
#pragma once

#include "base/pg.hpp"

namespace ck {

struct TableRef {
    Oid relid;
    const char *name;             // bare relation name, for messages
    const char *qualified;        // schema.name, unquoted, for messages
    const char *sql;              // quoted schema-qualified name, for statements
    const char *rows_sql;         // the same, ONLY for an ordinary table: statements about one
                                  // row by its key must not reach inheritance children, whose
                                  // keys the table's unique index does not cover
};

struct ColumnRef {
    AttrNumber attnum;
    Oid type;                     // declared type (a domain stays a domain)
    Oid base_type;                // the domain's base type, or type itself
    int32 typmod;
    const char *name;
    const char *sql;              // quoted identifier
    const char *type_sql;         // schema-qualified type name, without its typmod: a cast to it
                                  // never truncates (assignment to the column checks the length)
    const char *type_display;     // type name for messages
};

// The table behind a regclass argument: it must exist and be an ordinary or partitioned
// table. No privilege is checked here: the executor checks the caller's privileges when our
// statement runs, column privileges included, exactly as for the statement written by hand.
TableRef table_ref(Oid relid);

// The DDL generators read the table's definition only; they answer those who may read the
// table (SELECT on it or on one of its columns), as the plain DDL would need to: 42501 otherwise.
void require_select(const TableRef &table);

// A user column of the table, by name (42703 when missing, dropped or a system column, with
// hint when one is given).
ColumnRef column_ref(const TableRef &table, const char *name, const char *hint = nullptr);

// The column that identifies one row: the single-column primary key when key_column is
// NULL, else key_column, which must carry a single-column unique index (42P10 otherwise).
ColumnRef key_column_ref(const TableRef &table, const char *key_column);

// "key = $n" for a parameter of type param_type, immune to the search_path: with the key
// type's own equality operator when the types match; for a key of a built-in type, with
// pg_catalog's = as the parser resolves it for the two types (an integer key and a numeric
// 1.5 compare as numeric and match nothing, as in the hand-written WHERE); else with $n cast
// to the key's type when an assignment cast exists; 42804 otherwise.
const char *key_match_sql(const ColumnRef &key, Oid param_type, int param_no);

// "key = ANY ($n)" for a parameter of the array type array_type, matched as key_match_sql
// matches one of its elements (an array cast to the key's array type when needed).
const char *key_in_array_sql(const ColumnRef &key, Oid array_type, int param_no);

// A version column's type (of its base type, for a domain): smallint, integer or bigint.
bool is_version_type(Oid type);

// A key's value as its type's output function prints it, for messages (palloc'd; inside pg_call).
char *value_text(Datum value, Oid type);

} // namespace ck
