// A queue's paused keys, read from ck.paused_keys when its claim is planned.
#include "queue/store/paused_keys.hpp"
#include "queue/store/queue_rows.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/builtins.h"
}

namespace ck {

namespace {

// Not per queue (hence not a QueueStatement): one plan for every queue.
enum class PausedKeysStatement : uint8_t { Read };

} // namespace

PausedKeys read_paused_keys(Oid queue)
{
    PlanKey key(PausedKeysStatement::Read, InvalidOid, InvalidOid, "", nullptr);
    // As the queue's settings are read (store/statements.cpp, read_queue_row); none from an
    // extension not yet updated to 1.1.0.
    Snap snap = IsInParallelMode() ? Snap::ReadOnly : Snap::Latest;
    uint64 n = read_queue_rows(key, "paused_keys",
                               "SELECT concurrency_key FROM ck.paused_keys WHERE queue OPERATOR(pg_catalog.=) $1", queue,
                               snap);
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
