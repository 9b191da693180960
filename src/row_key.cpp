// Messages about one row addressed by its key.
#include "row_key.hpp"
#include "boundary.hpp"
#include "errcodes.hpp"

namespace ck {

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
