// What an overlap guard is about, read from a call's arguments (overlap_target.hpp).
#include "base/boundary.hpp"
#include "base/citus.hpp"
#include "guards/overlap_target.hpp"
#include "base/qualify.hpp"
#include "base/spi.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_constraint.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "utils/array.h"
#include "utils/rel.h"
}


namespace ck {

namespace {

// Scalar types btree_gist gives a GiST operator class (so they can be compared WITH =).
bool btree_gist_supports(Oid type)
{
    switch (type) {
    case INT2OID: case INT4OID: case INT8OID: case FLOAT4OID: case FLOAT8OID: case NUMERICOID:
    case OIDOID: case CASHOID: case TIMESTAMPOID: case TIMESTAMPTZOID: case TIMEOID: case TIMETZOID:
    case DATEOID: case INTERVALOID: case BPCHAROID: case VARCHAROID: case TEXTOID: case BYTEAOID:
    case BITOID: case VARBITOID: case MACADDROID: case MACADDR8OID: case INETOID: case CIDROID:
    case UUIDOID:
        return true;
    default:
        return type_is_enum(type);
    }
}

// Appends key to t's key columns, once its type is known to compare with = in GiST (with btree_gist if need be).
// Raises PostgreSQL errors: call inside pg_call.
void add_key(OverlapTarget &t, const ColumnRef &key)
{
    if (!OidIsValid(GetDefaultOpClass(key.base_type, GIST_AM_OID))) {
        if (OidIsValid(get_extension_oid("btree_gist", true)) || !btree_gist_supports(key.base_type))
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                            errmsg("column \"%s\" of type %s cannot be compared in a GiST exclusion constraint",
                                   key.name, key.type_display),
                            errhint("The type has no GiST operator class, even with btree_gist.")));
        t.needs_btree_gist = true;
    }
    t.keys[t.nkeys++] = key;
}

} // namespace

OverlapTarget overlap_target(FunctionCallInfo fcinfo)
{
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
        throw Error(ERRCODE_NULL_VALUE_NOT_ALLOWED, "tbl, range_col and key_cols must not be NULL",
                    "", "Pass '{}' for a guard without key columns.");
    Oid relid = PG_GETARG_OID(0);
    const char *range_name = NameStr(*PG_GETARG_NAME(1));
    ArrayType *keys = PG_GETARG_ARRAYTYPE_P(2);

    OverlapTarget t{};
    pg_call([&] {
        t.table = table_ref(relid);
        require_select(t.table);
        t.range = column_ref(t.table, range_name);
        char kind = get_typtype(t.range.base_type);
        if (kind != TYPTYPE_RANGE && kind != TYPTYPE_MULTIRANGE)
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("column \"%s\" of table \"%s\" is of type %s, not a range or multirange",
                                   t.range.name, t.table.qualified, t.range.type_display)));
        t.multirange = kind == TYPTYPE_MULTIRANGE;

        Datum *elems;
        bool *nulls;
        int n;
        deconstruct_array(keys, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &elems, &nulls, &n);
        if (ARR_NDIM(keys) > 1 || n > max_guard_keys)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("key_cols must be a list of at most %d column names", max_guard_keys)));
        for (int i = 0; i < n; i++) {
            if (nulls[i])
                ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("key_cols must not contain NULL")));
            ColumnRef key = column_ref(t.table, NameStr(*DatumGetName(elems[i])));
            if (key.attnum == t.range.attnum)
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("column \"%s\" is the range column; it cannot be a key column too", key.name)));
            for (int j = 0; j < t.nkeys; j++)
                if (t.keys[j].attnum == key.attnum)
                    ereport(ERROR, (errcode(ERRCODE_DUPLICATE_COLUMN),
                                    errmsg("column \"%s\" appears twice in key_cols", key.name)));
            add_key(t, key);
        }
    });
    return t;
}

void citus_overlap_key(OverlapTarget &t)
{
    pg_call([&] {
        CitusTable citus = citus_table(t.table.relid);
        t.citus = citus.kind != CitusKind::none;
        if (citus.kind != CitusKind::distributed)
            return;
        const char *column = get_attname(t.table.relid, citus.column, false);
        if (citus.column == t.range.attnum)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("table \"%s\" is distributed by Citus by its range column \"%s\": no overlap guard "
                                   "can hold on it", t.table.qualified, column),
                            errdetail("Citus enforces an exclusion constraint shard by shard, so it must compare the "
                                      "distribution column with =."),
                            errhint("Distribute the table by the key the ranges belong to (a room, a resource).")));
        for (int i = 0; i < t.nkeys; i++)
            if (t.keys[i].attnum == citus.column)
                return;
        if (t.nkeys == max_guard_keys)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("key_cols must be a list of at most %d column names", max_guard_keys - 1),
                            errdetail("Citus's distribution column \"%s\" is added to them.", column)));
        // The distribution column goes first: the guard is then the one the caller asked for, per its value.
        add_key(t, column_ref(t.table, column));
        ColumnRef added = t.keys[t.nkeys - 1];
        memmove(&t.keys[1], &t.keys[0], (t.nkeys - 1) * sizeof(ColumnRef));
        t.keys[0] = added;
        t.citus_column = added.name;
        ereport(NOTICE, (errmsg("table \"%s\" is distributed by Citus by column \"%s\": the overlap guard compares it "
                                "too, so it holds among rows of equal \"%s\"",
                                t.table.qualified, column, column),
                         errdetail("Citus enforces an exclusion constraint shard by shard, so it must compare the "
                                   "distribution column with =; rows of different \"%s\" may overlap.", column)));
    });
}

} // namespace ck
