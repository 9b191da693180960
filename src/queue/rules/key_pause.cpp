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
    // The jobs of paused keys, read before any statement replaces SPI_tuptable.
    struct Paused {
        uint64 row;
        JobPlace was;   // where the claim found it
        text *key;
    };
    std::vector<Paused> paused;
    for (uint64 i = 0; i < n; i++) {
        bool isnull;
        Datum key = pg_call([&] { return SPI_getbinval(claimed->vals[i], claimed->tupdesc, 9, &isnull); });
        if (isnull)
            continue;
        text *t = pg_call([&] { return DatumGetTextPP(key); });
        if (claim.paused_keys.count(std::string(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t))) > 0)
            paused.push_back({i, pg_call([&] { return job_place(i, 6, 1); }), t});
    }
    if (paused.empty())
        return n;
    std::vector<bool> parked(n, false);
    uint64 kept = n;
    for (const Paused &job : paused) {
        const QueuePlan &park = queue_statement(QueueStatement::KeyPark, queue);
        Datum values[4] = {Int64GetDatum(job.was.place.id), TimestampTzGetDatum(job.was.place.run_at), ObjectIdGetDatum(queue),
                           PointerGetDatum(job.key)};
        if (queue_execute(park, queue, values, nullptr, Snap::Latest) == 0)
            continue;   // resumed since the claim's settings were read: claimed after all
        // Ready where the claim found it if this transaction aborts; parked once it commits.
        pg_call([&] { frontier_on_abort(queue, job.was.priority, job.was.place); });
        parked[job.row] = true;
        kept--;
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
