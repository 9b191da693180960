// Pause of one concurrency key, at the claim: the claimed jobs of paused keys parked again.
#include "queue/rules/key_pause.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/store/place.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include <string>
#include <vector>

namespace ck {

uint64 park_paused(Oid queue, const QueuePlan &claim)
{
    SPITupleTable *claimed = SPI_tuptable;
    uint64 n = SPI_processed;
    pg_call([&] {
        check_place_columns(6, 1);
        if (claimed->tupdesc->natts < 9 || TupleDescAttr(claimed->tupdesc, 8)->atttypid != TEXTOID)
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("column \"concurrency_key\" is not of type text")));
    });
    std::vector<bool> parked(n, false);
    uint64 kept = n;
    for (uint64 i = 0; i < n; i++) {
        bool isnull;
        Datum key = pg_call([&] { return SPI_getbinval(claimed->vals[i], claimed->tupdesc, 9, &isnull); });
        if (isnull)
            continue;
        text *t = pg_call([&] { return DatumGetTextPP(key); });
        if (claim.paused_keys.count(std::string(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t))) == 0)
            continue;
        JobPlace was = pg_call([&] { return job_place(i, 6, 1); });
        const QueuePlan &park = queue_statement(QueueStatement::KeyPark, queue);
        Datum values[4] = {Int64GetDatum(was.place.id), TimestampTzGetDatum(was.place.run_at), ObjectIdGetDatum(queue),
                           PointerGetDatum(t)};
        if (queue_execute(park, queue, values, nullptr, Snap::Latest) == 0)
            continue;   // resumed since the claim's settings were read: claimed after all
        // Ready where the claim found it if this transaction aborts; parked once it commits.
        pg_call([&] { frontier_on_abort(queue, was.priority, was.place); });
        parked[i] = true;
        kept--;
    }
    if (kept == n) {
        pg_call([&] {
            SPI_tuptable = claimed;
            SPI_processed = n;
        });
        return n;
    }
    // The claim's rows, less those parked, are the result again.
    pg_call([&] {
        uint64 k = 0;
        for (uint64 i = 0; i < n; i++)
            if (!parked[i])
                claimed->vals[k++] = claimed->vals[i];
        claimed->numvals = k;
        SPI_tuptable = claimed;
        SPI_processed = k;
    });
    return kept;
}

} // namespace ck
