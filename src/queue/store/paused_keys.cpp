// A queue's paused keys, read from ck.paused_keys when its claim is planned.
#include "queue/store/paused_keys.hpp"
#include "base/plan_cache.hpp"
#include "base/spi.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/namespace.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

namespace ck {

namespace {

// Not per queue (hence not a QueueStatement): one plan for every queue.
enum class PausedKeysStatement : uint8_t { Read };

} // namespace

PausedKeys read_paused_keys(Oid queue)
{
    // An extension not yet updated to 1.1.0 has no paused keys (nor their table).
    bool installed = pg_call([] {
        Oid ck = get_namespace_oid("ck", true);
        return OidIsValid(ck) && OidIsValid(get_relname_relid("paused_keys", ck));
    });
    if (!installed)
        return {};
    PlanKey key(PausedKeysStatement::Read, InvalidOid, InvalidOid, "", nullptr);
    const Prepared &p = prepare_once(key, [] {
        Prepared read;
        Oid types[1] = {REGCLASSOID};
        read.plan = pg_call([&] {
            return prepare_kept("SELECT concurrency_key FROM ck.paused_keys WHERE queue OPERATOR(pg_catalog.=) $1", 1, types);
        });
        return read;
    });
    Datum values[1] = {ObjectIdGetDatum(queue)};
    // As the queue's settings are read (store/statements.cpp, read_queue_row).
    Snap snap = IsInParallelMode() ? Snap::ReadOnly : Snap::Latest;
    uint64 n = execute_plan(p.plan, values, nullptr, snap);
    PausedKeys keys;
    for (uint64 i = 0; i < n; i++) {
        bool isnull;
        Datum k = result_datum(i, 1, &isnull);
        if (isnull)
            continue;
        text *t = pg_call([&] { return DatumGetTextPP(k); });
        keys.emplace(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
    }
    return keys;
}

} // namespace ck
