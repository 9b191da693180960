// Rate limits per key: the claimed jobs counted against their keys' rates, those over it put off.
#include "queue/rules/rate.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/store/place.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <string>
#include <vector>

namespace ck {

namespace {

struct Claimed {
    uint64 row;         // in the claim's result
    bool keyed;
    std::string key;
    const RateLimit *limit;
    int64 id;
    JobPlace was;       // where the claim found it
};

// Runs a rate statement of the job's key; its rows are not kept.
uint64 run(QueueStatement kind, Oid queue, const Claimed &job, Snap snap, TimestampTz *returned = nullptr)
{
    const QueuePlan &p = queue_statement(kind, queue);
    Datum key = pg_call([&] { return PointerGetDatum(cstring_to_text_with_len(job.key.data(), static_cast<int>(job.key.size()))); });
    Datum values[6] = {ObjectIdGetDatum(queue), BoolGetDatum(job.keyed), key, Int32GetDatum(job.limit->max_jobs),
                       IntervalPGetDatum(&job.limit->period), Int64GetDatum(job.limit->width)};
    uint64 n = queue_execute(p, queue, values, nullptr, snap);
    if (returned != nullptr && n == 1) {
        bool isnull;
        Datum d = result_datum(0, 1, &isnull);
        *returned = isnull ? 0 : DatumGetTimestampTz(d);
    }
    pg_call([&] {
        if (SPI_tuptable != nullptr)
            SPI_freetuptable(SPI_tuptable);
        pfree(DatumGetPointer(key));
    });
    return n;
}

// Counts the start of job against its key's rate: true when it is within it. A key's first
// start makes its row; a concurrent first start waits for that insert, then counts against the
// committed row with the latest snapshot, its counts moved to the limit's buckets if the period
// changed (as ck.try_rate does).
bool take(Oid queue, const Claimed &job)
{
    if (run(QueueStatement::RateTake, queue, job, Snap::Fresh) == 1 ||
        run(QueueStatement::RateCreate, queue, job, Snap::Fresh) == 1)
        return true;
    run(QueueStatement::RateRescale, queue, job, Snap::Latest);
    return run(QueueStatement::RateTake, queue, job, Snap::Latest) == 1;
}

// Gives the job back unclaimed at the next moment its key has room; if this transaction aborts
// it is ready where the claim found it, and once it commits, at that moment.
void put_off(Oid queue, const Claimed &job)
{
    TimestampTz at = 0;
    run(QueueStatement::RatePutOff, queue, job, Snap::Latest, &at);
    if (at == 0)
        at = GetCurrentTimestamp();   // no row: it went since (a limit removed); ready again now
    const QueuePlan &defer = queue_statement(QueueStatement::RateDefer, queue);
    Datum values[2] = {Int64GetDatum(job.id), TimestampTzGetDatum(at)};
    queue_execute(defer, queue, values, nullptr, Snap::Latest);
    pg_call([&] {
        frontier_on_abort(queue, job.was.priority, job.was.place);
        frontier_on_commit(queue, job.was.priority, Place{at, job.id});
    });
}

// Gives the job back where the claim found it, uncounted: ready again for the next claim.
void give_back(Oid queue, const Claimed &job)
{
    const QueuePlan &defer = queue_statement(QueueStatement::RateDefer, queue);
    Datum values[2] = {Int64GetDatum(job.id), TimestampTzGetDatum(job.was.place.run_at)};
    queue_execute(defer, queue, values, nullptr, Snap::Latest);
    pg_call([&] { frontier_at_end(queue, job.was.priority, job.was.place); });
}

bool key_less(bool a_keyed, const std::string &a, bool b_keyed, const std::string &b)
{
    return a_keyed != b_keyed ? !a_keyed : a < b;
}

} // namespace

uint64 rate_filter(Oid queue, const QueuePlan &claim, RateKeyHeld *held)
{
    SPITupleTable *claimed = SPI_tuptable;
    uint64 n = SPI_processed;
    std::vector<Claimed> limited;
    pg_call([&] {
        check_place_columns(6, 1);
        if (claimed->tupdesc->natts < 9 || TupleDescAttr(claimed->tupdesc, 8)->atttypid != TEXTOID)
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("column \"concurrency_key\" is not of type text")));
    });
    for (uint64 i = 0; i < n; i++) {
        Claimed job{i, false, "", nullptr, 0, {}};
        bool isnull;
        Datum key = pg_call([&] { return SPI_getbinval(claimed->vals[i], claimed->tupdesc, 9, &isnull); });
        if (!isnull) {
            text *t = pg_call([&] { return DatumGetTextPP(key); });
            job.keyed = true;
            job.key.assign(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
        }
        job.limit = rate_limit_of(claim.rates, job.keyed, job.key);
        if (job.limit == nullptr)
            continue;
        pg_call([&] { job.was = job_place(i, 6, 1); });
        job.id = job.was.place.id;
        limited.push_back(std::move(job));
    }
    if (limited.empty())
        return n;
    // Key order (the jobs of one key in claim order): two claims lock keys' rows in one order.
    std::stable_sort(limited.begin(), limited.end(), [](const Claimed &a, const Claimed &b) {
        return key_less(a.keyed, a.key, b.keyed, b.key);
    });
    std::vector<bool> over(n, false);
    for (const Claimed &job : limited) {
        if (held->any && key_less(job.keyed, job.key, held->keyed, held->key)) {
            give_back(queue, job);
            over[job.row] = true;
            held->gave_back = true;
            continue;
        }
        if (!take(queue, job)) {
            put_off(queue, job);
            over[job.row] = true;
        }
        held->any = true;
        held->keyed = job.keyed;
        held->key = job.key;
    }
    // The claim's rows, less those put off, are the result again.
    uint64 kept = 0;
    pg_call([&] {
        for (uint64 i = 0; i < n; i++)
            if (!over[i])
                claimed->vals[kept++] = claimed->vals[i];
        claimed->numvals = kept;
        SPI_tuptable = claimed;
        SPI_processed = kept;
    });
    return kept;
}

} // namespace ck
