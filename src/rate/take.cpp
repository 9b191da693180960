// The rate of a key, counted in its row of ck.rates: one UPDATE ... WHERE <under the rate>.
#include "rate/take.hpp"
#include "base/boundary.hpp"
#include "base/plan_cache.hpp"
#include "base/qualify.hpp"
#include "base/spi.hpp"
#include "rate/window.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include <string>

namespace ck {

namespace {

// The statements of this file (plan_cache.hpp); each takes ($1 key, $2 n, $3 width).
enum class Statement : uint8_t {
    Take,      // counts a call of a known key if it is under its rate
    Insert,    // a key's first call
    Rescale,   // a key's counts moved to another period's buckets
    Next,      // when the next call would be counted
};

// A key's row holds its rate window (rate/window.hpp); a call under the rate counts in it with
// one UPDATE ... WHERE <room>, whose row lock holds until the caller's transaction ends.
std::string sql_of(Statement kind)
{
    RateWindowSql w = rate_window_sql("$2", "$3");
    const std::string key = " WHERE r.key" CK_OP("=") "$1";
    switch (kind) {
    case Statement::Take:
        return "UPDATE ck.rates AS r SET " + w.count + key + " AND " + w.room;
    case Statement::Insert:
        return "INSERT INTO ck.rates (key, " + w.columns + ") VALUES ($1, " + w.values + ") ON CONFLICT (key) DO NOTHING";
    case Statement::Rescale:
        return "UPDATE ck.rates AS r SET " + w.rescale + key + " AND " + w.other;
    case Statement::Next:
        return "SELECT " + w.next + " FROM ck.rates AS r" + key;
    }
    return "";
}

uint64 run(Statement kind, text *key, int32 n, Interval *period, Snap snap)
{
    PlanKey plan_key(kind, InvalidOid, InvalidOid, "", nullptr);
    const Prepared &p = prepare_once(plan_key, [&] {
        Prepared built;
        Oid types[3] = {TEXTOID, INT4OID, INT8OID};
        std::string sql = sql_of(kind);
        built.plan = pg_call([&] { return prepare_kept(sql.c_str(), 3, types); });
        return built;
    });
    Datum values[3] = {PointerGetDatum(key), Int32GetDatum(n), Int64GetDatum(rate_width(period))};
    return execute_plan(p.plan, values, nullptr, snap);
}

void check(text *key, int32 n)
{
    size_t bytes = VARSIZE_ANY_EXHDR(key);
    if (bytes == 0 || bytes > rate_key_max_bytes)
        throw Error(ERRCODE_INVALID_PARAMETER_VALUE,
                    fmt("a rate key must have 1 to %zu bytes, got %zu", rate_key_max_bytes, bytes));
    if (n < 1)
        throw Error(ERRCODE_INVALID_PARAMETER_VALUE, fmt("n must be at least 1, got %d", n));
}

} // namespace

bool rate_take(text *key, int32 n, Interval *period)
{
    check(key, n);
    spi_connect();
    // A fresh snapshot under READ COMMITTED, as the hand-written statement would take. A key's
    // first call inserts its row; a concurrent first call makes the insert wait for it and then
    // do nothing, and the row it committed is counted against with the latest snapshot (under
    // REPEATABLE READ too: it is bookkeeping, as a lock namespace's registration), once its counts
    // are in this period's buckets (a row last counted with another period).
    bool taken;
    try {
        taken = run(Statement::Take, key, n, period, Snap::Fresh) == 1 ||
                run(Statement::Insert, key, n, period, Snap::Fresh) == 1;
        if (!taken) {
            run(Statement::Rescale, key, n, period, Snap::Latest);
            taken = run(Statement::Take, key, n, period, Snap::Latest) == 1;
        }
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
