// Optimistic versioned updates (the seed article's version column): ck.try_update_if_version and
// ck.update_if_version run one
//   UPDATE t SET <each column of changes> = <its value>, v = v + 1 WHERE key AND v = $version
// so the check and the write are one statement; no row means someone changed it since. The key
// is declared "any": an unknown literal 'A1' is read as the key column's type.
#include "base/args.hpp"
#include "base/errcodes.hpp"
#include "base/plan_cache.hpp"
#include "base/qualify.hpp"
#include "base/relation.hpp"
#include "rows/row_key.hpp"
#include "base/spi.hpp"

extern "C" {
#include "utils/jsonb.h"
}

namespace {

using ck::Prepared;

// The statements of this file (plan_cache.hpp).
enum class Statement : uint8_t {
    VersionUpdate,   // one plan per table and set of changed columns
    ReadVersion,     // a row's current version, for the stale error
};

struct Call {
    Oid relid;
    Datum key;
    Oid key_type;             // UNKNOWNOID for a literal, until resolve_key
    int64 version;
    Jsonb *changes;
    const char *version_col;
    const char *key_column;   // nullptr: the primary key
    std::string columns;      // the keys of changes in jsonb's order, each ended by '\0'
};

// The top-level keys of changes, which must be an object. jsonb keeps them sorted and
// unique, so one set of columns always gives one plan key.
std::string change_columns(Jsonb *changes)
{
    if (!JB_ROOT_IS_OBJECT(changes) || JB_ROOT_IS_SCALAR(changes))
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE, "changes must be a JSON object",
                        "Pass the new values by column name, e.g. '{\"qty\": 5, \"note\": \"restocked\"}'.");
    StringInfoData keys = ck::pg_call([&] {
        StringInfoData buf;
        initStringInfo(&buf);
        JsonbIterator *it = JsonbIteratorInit(&changes->root);
        JsonbValue v;
        JsonbIteratorToken token;
        while ((token = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
            if (token == WJB_KEY) {
                appendBinaryStringInfo(&buf, v.val.string.val, v.val.string.len);
                appendStringInfoChar(&buf, '\0');
            }
        }
        return buf;
    });
    std::string out(keys.data, keys.len);
    ck::pg_call([&] { pfree(keys.data); });
    return out;
}

Call read_call(FunctionCallInfo fcinfo)
{
    ck::require_arg(fcinfo, 0, "table");
    ck::require_arg(fcinfo, 1, "key");
    ck::require_arg(fcinfo, 2, "version");
    ck::require_arg(fcinfo, 3, "changes");
    ck::require_arg(fcinfo, 4, "version_col");
    Call c{};
    c.relid = PG_GETARG_OID(0);
    c.key = PG_GETARG_DATUM(1);
    c.key_type = ck::polymorphic_arg_type(fcinfo, 1, "key");
    c.version = PG_GETARG_INT64(2);
    c.changes = PG_GETARG_JSONB_P(3);
    c.version_col = NameStr(*PG_GETARG_NAME(4));
    c.key_column = PG_ARGISNULL(5) ? nullptr : NameStr(*PG_GETARG_NAME(5));
    c.columns = change_columns(c.changes);
    return c;
}

// "col = ($3 ->> 'col')::type": the value travels in the jsonb parameter, never in the
// statement; json and jsonb columns take the JSON value itself (->).
const char *set_item(const ck::TableRef &table, const char *name, AttrNumber key, AttrNumber version)
{
    ck::ColumnRef c = ck::column_ref(table, name);
    if (c.attnum == key || c.attnum == version)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("changes must not set column \"%s\" of table \"%s\": it is the %s column", name,
                               table.qualified, c.attnum == key ? "key" : "version"),
                        errhint(c.attnum == key ? "A versioned update changes the row it found by its key."
                                                : "The version is bumped by the update itself.")));
    if (get_attgenerated(table.relid, c.attnum) != '\0')
        ereport(ERROR, (errcode(ERRCODE_GENERATED_ALWAYS),
                        errmsg("changes must not set column \"%s\" of table \"%s\": it is a generated column",
                               name, table.qualified)));
    bool json = c.base_type == JSONOID || c.base_type == JSONBOID;
    return psprintf("%s = ($3 %s %s::pg_catalog.text)::%s", c.sql, json ? CK_OP("->") : CK_OP("->>"),
                    quote_literal_cstr(name), c.type_sql);
}

Prepared build(const Call &call, Statement kind)
{
    struct Resolved {
        ck::TableRef table;
        ck::ColumnRef key;
        ck::ColumnRef version;
        Oid key_param;            // the type the key parameter takes
        const char *key_match;
        const char *sets;   // "a = ..., b = ..., " for every changed column
    } r;
    ck::pg_call([&] {
        r.table = ck::table_ref(call.relid);
        r.key = ck::key_column_ref(r.table, call.key_column);
        r.version = ck::column_ref(r.table, call.version_col);
        r.key_param = ck::key_param_type(r.key, call.key_type);
        r.key_match = ck::key_match_sql(r.key, r.key_param, 1);
        if (!ck::is_version_type(r.version.base_type))
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("column \"%s\" of table \"%s\" is of type %s, not a version", r.version.name,
                                   r.table.qualified, r.version.type_display),
                            errhint("A version column is smallint, integer or bigint.")));
        if (r.version.attnum == r.key.attnum)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("the version column \"%s\" of table \"%s\" is its key column", r.version.name,
                                   r.table.qualified)));
        StringInfoData sets;
        initStringInfo(&sets);
        for (const char *k = call.columns.data(); k < call.columns.data() + call.columns.size(); k += strlen(k) + 1)
            appendStringInfo(&sets, "%s, ", set_item(r.table, k, r.key.attnum, r.version.attnum));
        r.sets = sets.data;
    });

    std::string v = r.version.sql;
    std::string sql;
    int nargs = 3;
    if (kind == Statement::VersionUpdate) {
        sql = std::string("UPDATE ") + r.table.rows_sql + " SET " + r.sets + v + " = " + v + CK_OP("+") "1 WHERE " +
              r.key_match + " AND " + v + CK_OP("=") "$2 RETURNING " + v + "::pg_catalog.int8";
    } else {
        sql = std::string("SELECT ") + v + "::pg_catalog.int8 FROM " + r.table.rows_sql + " WHERE " + r.key_match;
        nargs = 1;
    }
    Oid types[3] = {r.key_param, INT8OID, JSONBOID};
    SPIPlanPtr plan = ck::pg_call([&] { return ck::prepare_kept(sql.c_str(), nargs, types); });
    return ck::row_plan(plan, r.table, r.version, r.key, r.key_param);
}

// The plan, cached by the key's type as the call gives it (unknown for a literal); a literal
// key is then read as the type the plan takes.
const Prepared &prepared(Call &call, Statement kind)
{
    ck::PlanKey key(kind, call.relid, call.key_type, call.version_col, call.key_column,
                    kind == Statement::VersionUpdate ? call.columns : std::string());
    const Prepared &p = ck::prepare_once(key, [&] { return build(call, kind); });
    ck::resolve_key(p, &call.key, &call.key_type);
    return p;
}

// The version in column 1 of the last result's first row (NULL when the row holds NULL).
bool returned_version(int64 *version)
{
    bool isnull;
    Datum d = ck::result_datum(0, 1, &isnull);
    *version = isnull ? 0 : DatumGetInt64(d);
    return !isnull;
}

Datum update_if_version(FunctionCallInfo fcinfo, bool raise)
{
    Call call = read_call(fcinfo);
    ck::spi_connect();
    const Prepared &p = prepared(call, Statement::VersionUpdate);
    Datum values[3] = {call.key, Int64GetDatum(call.version), JsonbPGetDatum(call.changes)};
    int64 version = 0;
    if (ck::execute_plan(p.plan, values, nullptr) == 1) {
        returned_version(&version);
        ck::spi_finish();
        PG_RETURN_INT64(version);
    }
    if (!raise) {
        ck::spi_finish();
        PG_RETURN_NULL();
    }

    // A fresh snapshot: the UPDATE may have waited for the writer that made it stale; the
    // message reports the version that writer left.
    const char *hint = "ck.try_update_if_version returns NULL instead of raising.";
    const Prepared &read = prepared(call, Statement::ReadVersion);
    std::string key = ck::key_text(call.key, call.key_type);
    if (ck::execute_plan(read.plan, values, nullptr, ck::Snap::Fresh) == 0)
        ck::raise_no_such_row(p, key, hint);
    std::string current = returned_version(&version) ? ck::fmt(INT64_FORMAT, version) : "NULL";
    throw ck::Error(CK_ERRCODE_STALE_VERSION,
                    ck::fmt("%s %s: %s is %s, not " INT64_FORMAT ": the row changed since it was read",
                            p.table.c_str(), key.c_str(), p.column.c_str(), current.c_str(), call.version),
                    ck::fmt("Table %s, %s: expected " INT64_FORMAT ", current %s.", p.qualified.c_str(),
                            p.column.c_str(), call.version, current.c_str()),
                    "Read the row again, apply the change to what it holds now, and retry with its version; "
                    "ck.try_update_if_version returns NULL instead of raising.");
}

} // namespace

// The 1.0 functions.
CK_FUNCTION(ck_try_update_if_version) { return update_if_version(fcinfo, false); }
CK_FUNCTION(ck_update_if_version_v1) { return update_if_version(fcinfo, true); }

// The 0.x functions, with their 0.x meaning until ALTER EXTENSION UPDATE replaces them (the 0.x
// scripts name these symbols): update_if_version returned NULL when stale.
CK_FUNCTION(ck_update_if_version) { return update_if_version(fcinfo, false); }
CK_FUNCTION(ck_update_if_version_or_raise) { return update_if_version(fcinfo, true); }
