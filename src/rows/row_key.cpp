// One row addressed by its key: the type of the key a plan takes, and messages about the row.
#include "rows/row_key.hpp"
#include "base/boundary.hpp"
#include "base/errcodes.hpp"

extern "C" {
#include "parser/parse_coerce.h"
}

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

// An argument of a string type (text, varchar, ... or an array of one) for a key column of
// another category: read with that column type's input function, as a literal would be.
static bool read_as_key_type(Oid arg_type, Oid key_type, bool as_array)
{
    if (arg_type == UNKNOWNOID)
        return true;
    Oid element = as_array ? get_element_type(arg_type) : arg_type;
    return OidIsValid(element) && TypeCategory(element) == TYPCATEGORY_STRING &&
           TypeCategory(key_type) != TYPCATEGORY_STRING;
}

Oid key_param_type(const ColumnRef &key, Oid arg_type, bool as_array)
{
    if (!read_as_key_type(arg_type, key.type, as_array))
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
    if (*key_type == p.key_type)
        return;
    // Only a key key_param_type read as the plan's type gets here: an unknown literal arrives
    // as a C string (the parser leaves it uncoerced for "any"), a string type is printed first.
    *key = pg_call([&] {
        char *text = *key_type == UNKNOWNOID ? DatumGetCString(*key) : value_text(*key, *key_type);
        Oid input;
        Oid io_param;
        getTypeInputInfo(p.key_type, &input, &io_param);
        return OidInputFunctionCall(input, text, io_param, -1);
    });
    *key_type = p.key_type;
}

std::string key_text(Datum key, Oid key_type)
{
    return pg_call([&] { return value_text(key, key_type); });
}

void raise_no_such_row(const Prepared &p, const std::string &key, const char *hint)
{
    throw Error(CK_ERRCODE_NO_SUCH_ROW, fmt("%s %s: no such row", p.table.c_str(), key.c_str()),
                fmt("No row of %s has %s = %s.", p.qualified.c_str(), p.key_column.c_str(), key.c_str()), hint);
}

} // namespace ck
