// Rate limits per key: the claimed jobs counted against their keys' rates, those over it put off.
#include "queue/rules/rate.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/store/place.hpp"
#include "rate/window.hpp"

extern "C" {
#include "access/transam.h"
#include "access/xact.h"
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

// The parameters every rate statement takes: the job's queue and key, its limit, a stripe
// ($7, -1: none) and the bucket of now ($8). values[2] is the key, a text in the current memory
// context.
void rate_params(Oid queue, const Claimed &job, int32 stripe, Datum values[8])
{
    values[0] = ObjectIdGetDatum(queue);
    values[1] = BoolGetDatum(job.keyed);
    values[2] = pg_call([&] { return PointerGetDatum(cstring_to_text_with_len(job.key.data(), static_cast<int>(job.key.size()))); });
    values[3] = Int32GetDatum(job.limit->max_jobs);
    values[4] = IntervalPGetDatum(&job.limit->period);
    values[5] = Int64GetDatum(job.limit->width);
    values[6] = Int32GetDatum(stripe);
    values[7] = Int64GetDatum(rate_bucket(GetCurrentTimestamp(), job.limit->width));
}

// Runs a rate statement of the job's key (stripe: $7); its rows are not kept. cols: the first
// ncols columns of its one row, if it returned one (and their nulls).
uint64 run(QueueStatement kind, Oid queue, const Claimed &job, Snap snap, int32 stripe = -1, Datum *cols = nullptr,
           bool *nulls = nullptr, int ncols = 1)
{
    const QueuePlan &p = queue_statement(kind, queue);
    Datum values[8];
    rate_params(queue, job, stripe, values);
    uint64 n = queue_execute(p, queue, values, nullptr, snap);
    for (int i = 0; cols != nullptr && n == 1 && i < ncols; i++)
        cols[i] = result_datum(0, i + 1, &nulls[i]);
    pg_call([&] {
        if (SPI_tuptable != nullptr)
            SPI_freetuptable(SPI_tuptable);
        pfree(DatumGetPointer(values[2]));
    });
    return n;
}

// What a key's stripes look like, read with the latest snapshot and no lock (RateProbe).
struct Stripes {
    int32 rows = 0;             // its active stripes that have a row
    bool other_width = false;   // some counted with another period: to rescale first
    int32 mine = -1;            // the greatest stripe this transaction holds (-1: none)
    std::vector<int32> with_room;   // its stripes with room (held or not)
};

// A row a statement locked stays locked when its recheck then failed (an UPDATE that waited, a
// SKIP LOCKED pick whose row changed since the snapshot): which stripes this transaction holds is
// read from their lockers, not guessed.
Stripes probe(Oid queue, const Claimed &job)
{
    const QueuePlan &p = queue_statement(QueueStatement::RateProbe, queue);
    Datum values[8];
    rate_params(queue, job, -1, values);
    uint64 n = queue_execute(p, queue, values, nullptr, Snap::Latest);
    Stripes s;
    for (uint64 i = 0; i < n; i++) {
        bool isnull;
        int32 stripe = DatumGetInt32(result_datum(i, 1, &isnull));
        TransactionId locker = DatumGetTransactionId(result_datum(i, 2, &isnull));
        if (DatumGetBool(result_datum(i, 3, &isnull)))
            s.rows++;
        s.other_width |= DatumGetBool(result_datum(i, 4, &isnull));
        if (DatumGetBool(result_datum(i, 5, &isnull)))
            s.with_room.push_back(stripe);
        if (pg_call([&] { return TransactionIdIsValid(locker) && TransactionIdIsCurrentTransactionId(locker); }))
            s.mine = std::max(s.mine, stripe);
    }
    pg_call([&] {
        SPI_freetuptable(SPI_tuptable);
        pfree(DatumGetPointer(values[2]));
    });
    return s;
}

bool key_less(bool a_keyed, const std::string &a, bool b_keyed, const std::string &b)
{
    return a_keyed != b_keyed ? !a_keyed : a < b;
}

enum class Took { Counted, Over, GiveBack };

// The claim now holds stripe of job's key: held moves up to it if it is above.
void hold(RateKeyHeld *held, const Claimed &job, int32 stripe)
{
    if (!held->any || key_less(held->keyed, held->key, job.keyed, job.key)) {
        held->any = true;
        held->keyed = job.keyed;
        held->key = job.key;
        held->stripe = stripe;
    } else if (held->keyed == job.keyed && held->key == job.key)
        held->stripe = std::max(held->stripe, stripe);
}

// Counts the start of job against its key's rate. First on a stripe with room that no other claim
// holds (SKIP LOCKED: claims of one key in flight count on different rows, never waiting for each
// other); when every stripe with room is held, it waits for one, the lowest above all this claim
// holds (keys, then stripes, in order: no two claims wait for each other), as long as lock_timeout
// allows, and counts there if that claim's commit left room; none left above: the job is given back
// where it was (never put off for stripes that were only held). Over the rate only when no stripe
// has room by what committed. A key's first start makes its stripes (a concurrent first start
// waits for that insert), and a period changed moves the counts to its buckets (as ck.try_rate
// does), both waiting only for rows above all the claim holds (and holding every stripe after).
Took take(Oid queue, const Claimed &job, RateKeyHeld *held)
{
    int32 active = std::min(job.limit->max_jobs, rate_stripes);
    // Each wait that finds its stripe full again was another claim's commit: bounded all the same.
    for (int step = 0; step < 2 * rate_stripes + 2; step++) {
        Datum d;
        bool isnull;
        if (run(QueueStatement::RateTake, queue, job, step == 0 ? Snap::Fresh : Snap::Latest, -1, &d, &isnull) == 1) {
            hold(held, job, DatumGetInt32(d));   // and maybe stripes below it that it passed
            return Took::Counted;
        }
        Stripes s = probe(queue, job);
        if (s.mine >= 0)
            hold(held, job, s.mine);
        bool same = held->any && held->keyed == job.keyed && held->key == job.key;
        bool below = held->any && !same && key_less(job.keyed, job.key, held->keyed, held->key);
        if (s.rows < active || s.other_width) {
            if (below || same)
                return Took::GiveBack;
            if (s.rows < active)
                run(QueueStatement::RateCreate, queue, job, Snap::Latest);
            if (s.other_width)
                run(QueueStatement::RateRescale, queue, job, Snap::Latest);
            hold(held, job, rate_stripes - 1);   // its stripes made or locked: no wait for them after
            continue;
        }
        if (s.with_room.empty())
            return Took::Over;
        int32 wait_on = -1;
        for (int32 stripe : s.with_room)
            if (!below && (!same || stripe > held->stripe)) {
                wait_on = stripe;
                break;
            }
        if (wait_on < 0)
            return Took::GiveBack;
        uint64 counted = run(QueueStatement::RateWait, queue, job, Snap::Latest, wait_on, &d, &isnull);
        hold(held, job, wait_on);   // locked by the wait even when its room was gone
        if (counted == 1)
            return Took::Counted;
    }
    return Took::GiveBack;
}

// Gives the job back unclaimed at the next moment its key has room (booked on a stripe, which the
// claim then holds); if this transaction aborts it is ready where the claim found it, and once it
// commits, at that moment.
void put_off(Oid queue, const Claimed &job, RateKeyHeld *held)
{
    Datum c[2];
    bool nulls[2] = {true, true};
    run(QueueStatement::RatePutOff, queue, job, Snap::Latest, -1, c, nulls, 2);
    TimestampTz at = nulls[0] ? 0 : DatumGetTimestampTz(c[0]);
    if (!nulls[1])
        hold(held, job, DatumGetInt32(c[1]));
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
        switch (take(queue, job, held)) {
        case Took::Counted:
            break;
        case Took::Over:
            put_off(queue, job, held);
            over[job.row] = true;
            break;
        case Took::GiveBack:
            give_back(queue, job);
            over[job.row] = true;
            held->gave_back = true;
            break;
        }
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
