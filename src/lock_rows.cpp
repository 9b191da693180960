// ck.lock_rows: row locks the guide's way (RULES.md, write skew and row lock modes). The rows a
// decision rests on are locked with one
//   SELECT FROM t WHERE key = ANY ($1) ORDER BY key FOR NO KEY UPDATE
// LockRows sits above the Sort, so rows are locked in key order whatever order the caller
// gives: two callers locking overlapping sets wait for each other and never deadlock.
#include "args.hpp"
#include "guc_scope.hpp"
#include "plan_cache.hpp"
#include "relation.hpp"
#include "spi.hpp"

extern "C" {
#include "utils/array.h"
#include "utils/timestamp.h"
}

#include <string>

namespace {

struct Mode {
    const char *name;     // as the caller writes it
    const char *clause;
};

constexpr Mode modes[] = {
    {"no key update", "FOR NO KEY UPDATE"},
    {"update", "FOR UPDATE"},
    {"share", "FOR SHARE"},
    {"key share", "FOR KEY SHARE"},
};

const Mode &mode_arg(FunctionCallInfo fcinfo, int argno)
{
    ck::require_arg(fcinfo, argno, "mode");
    std::string given = ck::pg_call([&] { return text_to_cstring(PG_GETARG_TEXT_PP(argno)); });
    for (const Mode &m : modes)
        if (pg_strcasecmp(given.c_str(), m.name) == 0)
            return m;
    throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE,
                    ck::fmt("unknown row lock mode \"%.64s\"", given.c_str()),
                    "", "The modes are 'no key update' (the default), 'update', 'share' and 'key share'.");
}

struct Call {
    Oid relid;
    Datum keys;
    Oid keys_type;
    const Mode *mode;
    int ms;                  // -1: no bound of the call's own; 0: NOWAIT
    const char *key_column;  // nullptr: the primary key
};

const ck::Prepared &prepared(const Call &call)
{
    std::string variant = std::string(call.mode->name) + (call.ms == 0 ? " nowait" : "");
    ck::PlanKey key(ck::StatementKind::LockRows, call.relid, call.keys_type, variant.c_str(), call.key_column);
    return ck::prepare_once(key, [&] {
        ck::Prepared p;
        p.plan = ck::pg_call([&] {
            ck::TableRef t = ck::table_ref(call.relid);
            ck::ColumnRef k = ck::key_column_ref(t, call.key_column);
            const char *sql = psprintf("SELECT FROM %s WHERE %s ORDER BY %s %s%s", t.rows_sql,
                                       ck::key_in_array_sql(k, call.keys_type, 1), k.sql, call.mode->clause,
                                       call.ms == 0 ? " NOWAIT" : "");
            Oid types[1] = {call.keys_type};
            return ck::prepare_kept(sql, 1, types);
        });
        p.table = ck::pg_call([&] { return get_rel_name(call.relid); });
        return p;
    });
}

// Takes the locks one row per fetch, each wait bounded by what is left of ms, so the whole
// call waits at most ms (lock_timeout alone would bound each row's wait, not their sum).
uint64 lock_within(SPIPlanPtr plan, Datum *values, int ms)
{
    ck::PlanExecution executing;
    return ck::pg_call([&] {
        int nest = ck::push_lock_timeout(ms);
        TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);
        Portal portal = SPI_cursor_open(nullptr, plan, values, nullptr, false);
        uint64 locked = 0;
        for (;;) {
            ck::reset_lock_timeout(static_cast<int>((deadline - GetCurrentTimestamp()) / 1000));
            SPI_cursor_fetch(portal, true, 1);
            if (SPI_processed == 0)
                break;
            locked++;
            SPI_freetuptable(SPI_tuptable);
        }
        SPI_cursor_close(portal);
        ck::pop_settings(nest);
        return locked;
    });
}

} // namespace

CK_FUNCTION(ck_lock_rows)
{
    ck::require_arg(fcinfo, 0, "table");
    ck::require_arg(fcinfo, 1, "keys");
    Call call{};
    call.relid = PG_GETARG_OID(0);
    call.keys = PG_GETARG_DATUM(1);
    call.keys_type = ck::polymorphic_arg_type(fcinfo, 1, "keys");
    call.mode = &mode_arg(fcinfo, 2);
    call.ms = ck::timeout_ms_arg(fcinfo, 3, true, "'0' locks without waiting (NOWAIT); NULL waits as lock_timeout says.");
    call.key_column = PG_ARGISNULL(4) ? nullptr : NameStr(*PG_GETARG_NAME(4));
    if (ck::pg_call([&] { return array_contains_nulls(DatumGetArrayTypeP(call.keys)); }))
        throw ck::Error(ERRCODE_NULL_VALUE_NOT_ALLOWED, "keys must not contain NULL",
                        "A NULL key matches no row: the lock it asks for would silently not be taken.");

    ck::spi_connect();
    const ck::Prepared &p = prepared(call);
    Datum values[1] = {call.keys};
    uint64 locked;
    try {
        locked = call.ms > 0 ? lock_within(p.plan, values, call.ms) : ck::execute_plan(p.plan, values, nullptr);
    } catch (const ck::PgError &e) {
        ErrorData *edata = e.data();
        if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE || call.ms < 0)
            throw;
        // Name the table and the bound in the message; the SQLSTATE stays 55P03.
        ck::pg_call([&] {
            edata->message = call.ms == 0 ? psprintf("rows of %s are locked by another transaction", p.table.c_str())
                                          : psprintf("rows of %s not locked within %d ms", p.table.c_str(), call.ms);
            edata->detail = pstrdup("Another transaction holds a conflicting lock on one of them; see ck.lock_waits().");
        });
        throw;
    }
    ck::spi_finish();
    PG_RETURN_INT64(static_cast<int64>(locked));
}
