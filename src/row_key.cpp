// One row addressed by its key: the type of the key a plan takes, and messages about the row.
#include "row_key.hpp"
#include "boundary.hpp"
#include "errcodes.hpp"

namespace ck {

Prepared row_plan(SPIPlanPtr plan, const TableRef &table, const ColumnRef &column, const ColumnRef &key,
                  Oid key_type)
{
    Prepared p;
    p.plan = plan;
    p.table = table.name;
    p.qualified = table.qualified;
    p.column = column.name;
    p.key_column = key.name;
    p.key_type = key_type;
    return p;
}

Oid key_param_type(const ColumnRef &key, Oid arg_type, bool as_array)
{
    if (arg_type != UNKNOWNOID)
        return arg_type;
    if (!as_array)
        return key.type;
    Oid array = get_array_type(key.type);
    if (!OidIsValid(array))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("column \"%s\" of type %s has no array type", key.name, key.type_display),
                        errhint("Pass the keys as an array of a type that column compares with.")));
    return array;
}

void resolve_key(const Prepared &p, Datum *key, Oid *key_type)
{
    if (*key_type != UNKNOWNOID)
        return;
    // An unknown literal arrives as a C string (the parser leaves it uncoerced for "any").
    *key = pg_call([&] {
        Oid input;
        Oid io_param;
        getTypeInputInfo(p.key_type, &input, &io_param);
        return OidInputFunctionCall(input, DatumGetCString(*key), io_param, -1);
    });
    *key_type = p.key_type;
}

std::string key_text(Datum key, Oid key_type)
{
    return pg_call([&] {
        Oid out;
        bool varlena;
        getTypeOutputInfo(key_type, &out, &varlena);
        return OidOutputFunctionCall(out, key);
    });
}

void raise_no_such_row(const Prepared &p, const std::string &key, const char *hint)
{
    throw Error(CK_ERRCODE_NO_SUCH_ROW, fmt("%s %s: no such row", p.table.c_str(), key.c_str()),
                fmt("No row of %s has %s = %s.", p.qualified.c_str(), p.key_column.c_str(), key.c_str()), hint);
}

} // namespace ck
