// The rows a table of settings per queue holds for one queue (queue_rows.hpp).
#include "queue/store/queue_rows.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "utils/lsyscache.h"
}

namespace ck {

uint64 read_queue_rows(const PlanKey &key, const char *table, const char *sql, Oid queue, Snap snap)
{
    bool installed = pg_call([&] {
        Oid ck = get_namespace_oid("ck", true);
        return OidIsValid(ck) && OidIsValid(get_relname_relid(table, ck));
    });
    if (!installed)
        return 0;
    const Prepared &p = prepare_once(key, [&] {
        Prepared read;
        Oid types[1] = {REGCLASSOID};
        read.plan = pg_call([&] { return prepare_kept(sql, 1, types); });
        return read;
    });
    Datum values[1] = {ObjectIdGetDatum(queue)};
    return execute_plan(p.plan, values, nullptr, snap);
}

} // namespace ck
