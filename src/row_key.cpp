// Messages about one row addressed by its key.
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

std::string key_text(Datum key, Oid key_type)
{
    return pg_call([&] {
        Oid out;
        bool varlena;
        getTypeOutputInfo(key_type, &out, &varlena);
        return OidOutputFunctionCall(out, key);
    });
}

void raise_no_such_row(const Prepared &p, const std::string &key)
{
    throw Error(CK_ERRCODE_NO_SUCH_ROW, fmt("%s %s: no such row", p.table.c_str(), key.c_str()),
                fmt("No row of %s has %s = %s.", p.qualified.c_str(), p.key_column.c_str(), key.c_str()));
}

} // namespace ck
