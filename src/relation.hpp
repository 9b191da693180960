// Catalog look-ups that validate a caller's table and column arguments. They raise
// PostgreSQL errors directly, so call them only inside pg_call (they own no C++ objects).
#pragma once

#include "pg.hpp"

namespace ck {

struct TableRef {
    Oid relid;
    const char *name;             // bare relation name, for messages
    const char *qualified;        // schema.name, unquoted, for messages
    const char *sql;              // quoted schema-qualified name, for statements
};

struct ColumnRef {
    AttrNumber attnum;
    Oid type;                     // declared type (a domain stays a domain)
    Oid base_type;                // the domain's base type, or type itself
    int32 typmod;
    const char *name;
    const char *sql;              // quoted identifier
    const char *type_sql;         // schema-qualified type name with its typmod
    const char *type_display;     // type name for messages
};

// The table behind a regclass argument: it must exist, be an ordinary or partitioned
// table, and the current user must hold `required` on it (42501 otherwise).
TableRef table_ref(Oid relid, AclMode required);

// A user column of the table, by name (42703 when missing, dropped or a system column).
ColumnRef column_ref(const TableRef &table, const char *name);

// The column that identifies one row: the single-column primary key when key_column is
// NULL, else key_column, which must carry a single-column unique index (42P10 otherwise).
ColumnRef key_column_ref(const TableRef &table, const char *key_column);

// How a parameter of type param_type is compared with the key column: "$n" when the types
// match, "$n::type" when an assignment cast exists; 42804 otherwise.
const char *key_param_sql(const ColumnRef &key, Oid param_type, int param_no);

} // namespace ck
