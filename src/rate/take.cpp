// The rate of a key, counted in its row of ck.rates: one UPDATE ... WHERE <under the rate>.
#include "rate/take.hpp"
#include "base/boundary.hpp"
#include "base/plan_cache.hpp"
#include "base/spi.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

namespace ck {

namespace {

// The statements of this file (plan_cache.hpp); each takes ($1 key, $2 n, $3 period).
enum class Statement : uint8_t {
    Take,     // counts a call of a known key if it is under its rate
    Insert,   // a key's first call
    Next,     // when the next call would be counted
};

// A key's row holds its latest counted moments, oldest first, at most n. A call is under the
// rate when fewer than n are kept or the n-th latest left the window (now - period, now]; it
// then keeps the n - 1 latest and appends now. The moment is read after the row is locked
// (clock_timestamp in the UPDATE, evaluated again on the row's latest version when a
// concurrent update committed first), so the moments stay in commit order.
const char *const take_sql =
    "UPDATE ck.rates AS r"
    " SET stamps = pg_catalog.array_append(r.stamps[GREATEST(pg_catalog.cardinality(r.stamps)"
    " OPERATOR(pg_catalog.-) $2 OPERATOR(pg_catalog.+) 2, 1):], pg_catalog.clock_timestamp())"
    " WHERE r.key OPERATOR(pg_catalog.=) $1"
    " AND (pg_catalog.cardinality(r.stamps) OPERATOR(pg_catalog.<) $2"
    " OR r.stamps[pg_catalog.cardinality(r.stamps) OPERATOR(pg_catalog.-) $2 OPERATOR(pg_catalog.+) 1]"
    " OPERATOR(pg_catalog.<=) (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) $3))";

const char *const insert_sql =
    "INSERT INTO ck.rates (key, stamps) VALUES ($1, ARRAY[pg_catalog.clock_timestamp()])"
    " ON CONFLICT (key) DO NOTHING";

const char *const next_sql =
    "SELECT r.stamps[pg_catalog.cardinality(r.stamps) OPERATOR(pg_catalog.-) $2 OPERATOR(pg_catalog.+) 1]"
    " OPERATOR(pg_catalog.+) $3 FROM ck.rates AS r WHERE r.key OPERATOR(pg_catalog.=) $1";

uint64 run(Statement kind, text *key, int32 n, Interval *period, Snap snap)
{
    PlanKey plan_key(kind, InvalidOid, InvalidOid, "", nullptr);
    const Prepared &p = prepare_once(plan_key, [&] {
        Prepared built;
        Oid types[3] = {TEXTOID, INT4OID, INTERVALOID};
        const char *sql = kind == Statement::Take ? take_sql : kind == Statement::Insert ? insert_sql : next_sql;
        built.plan = pg_call([&] { return prepare_kept(sql, 3, types); });
        return built;
    });
    Datum values[3] = {PointerGetDatum(key), Int32GetDatum(n), IntervalPGetDatum(period)};
    return execute_plan(p.plan, values, nullptr, snap);
}

void check(text *key, int32 n)
{
    size_t bytes = VARSIZE_ANY_EXHDR(key);
    if (bytes == 0 || bytes > rate_key_max_bytes)
        throw Error(ERRCODE_INVALID_PARAMETER_VALUE,
                    fmt("a rate key must have 1 to %zu bytes, got %zu", rate_key_max_bytes, bytes));
    if (n < 1 || n > rate_max_n)
        throw Error(ERRCODE_INVALID_PARAMETER_VALUE, fmt("n must be between 1 and %d, got %d", rate_max_n, n),
                    "The key's row keeps its n latest counted calls.",
                    "For a higher rate, count over a shorter period: 100 per second rather than 360000 per hour.");
}

} // namespace

bool rate_take(text *key, int32 n, Interval *period)
{
    check(key, n);
    spi_connect();
    // A fresh snapshot under READ COMMITTED, as the hand-written statement would take. A key's
    // first call inserts its row; a concurrent first call makes the insert wait for it and then
    // do nothing, and the row it committed is counted against with the latest snapshot (under
    // REPEATABLE READ too: it is bookkeeping, as a lock namespace's registration).
    bool taken;
    try {
        taken = run(Statement::Take, key, n, period, Snap::Fresh) == 1 ||
                run(Statement::Insert, key, n, period, Snap::Fresh) == 1 ||
                run(Statement::Take, key, n, period, Snap::Latest) == 1;
    } catch (const PgError &e) {
        ErrorData *edata = e.data();
        if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
            pg_call([&] {
                edata->message = psprintf("rate key %s is held by a transaction that counted a call of it",
                                          quote_literal_cstr(text_to_cstring(key)));
                edata->detail = pstrdup("Not ended within lock_timeout.");
                edata->hint = pstrdup("Count calls in short transactions: the key's row stays locked until the end.");
            });
        throw;
    }
    spi_finish();
    return taken;
}

TimestampTz rate_next(text *key, int32 n, Interval *period)
{
    check(key, n);
    spi_connect();
    TimestampTz next = 0;
    if (run(Statement::Next, key, n, period, Snap::Latest) == 1) {
        bool isnull;
        Datum d = result_datum(0, 1, &isnull);
        if (!isnull)
            next = DatumGetTimestampTz(d);
    }
    spi_finish();
    return next;
}

} // namespace ck
