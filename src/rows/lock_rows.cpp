// ck.lock_rows: row locks the guide's way (README, "The rules behind it": write skew, row lock modes). The rows a
// decision rests on are locked with one
//   SELECT FROM t WHERE key = ANY ($1) ORDER BY key FOR NO KEY UPDATE
// LockRows sits above the Sort, so rows are locked in key order whatever order the caller
// gives: two callers locking overlapping sets wait for each other and never deadlock.
// On a Citus table distributed by the key, Citus takes FOR UPDATE only in a statement that
// stays in one shard: there the keys are locked one statement each, in the same key order.
// (A single-column unique key of a distributed table is its distribution column: Citus
// requires every unique index to include it.) A Citus statement may wait on another node,
// where this backend's lock_timeout does not reach: PostgreSQL's lock-timeout timer bounds it
// here instead, cancelling it (and Citus the remote part) with 55P03.
// keys is declared "any": an unknown literal '{A1,B2}' is read as an array of the key column's type.
#include "base/args.hpp"
#include "base/citus.hpp"
#include "base/guc_scope.hpp"
#include "base/plan_cache.hpp"
#include "base/relation.hpp"
#include "rows/row_key.hpp"
#include "base/spi.hpp"

extern "C" {
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

#include <algorithm>
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
    Oid keys_type;           // UNKNOWNOID for a literal, until resolve_key
    const Mode *mode;
    int ms;                  // -1: no bound of the call's own; 0: NOWAIT
    const char *key_column;  // nullptr: the primary key
};

// The plan, cached by the keys' type as the call gives it (unknown for a literal); a literal is
// then read as the array type the plan takes.
// ck.lock_rows' one statement (plan_cache.hpp), and what a Citus table needs beside it: its
// waits may be on other nodes; on a distributed table each_plan locks one key, run for each
// row (key) of plan.
enum class Statement : uint8_t { LockRows };
struct LockPlan : ck::Prepared {
    bool citus = false;
};

const LockPlan &prepared(Call &call)
{
    std::string variant = std::string(call.mode->name) + (call.ms == 0 ? " nowait" : "");
    ck::PlanKey key(Statement::LockRows, call.relid, call.keys_type, variant.c_str(), call.key_column);
    const LockPlan &prepared = ck::prepare_once<LockPlan>(key, [&] {
        LockPlan p;
        ck::pg_call([&] {
            ck::TableRef t = ck::table_ref(call.relid);
            ck::ColumnRef k = ck::key_column_ref(t, call.key_column);
            const char *nowait = call.ms == 0 ? " NOWAIT" : "";
            p.key_type = ck::key_param_type(k, call.keys_type, true);
            Oid types[1] = {p.key_type};
            ck::CitusTable citus = ck::citus_table(call.relid);
            p.citus = citus.kind != ck::CitusKind::none;
            if (citus.kind != ck::CitusKind::distributed) {
                p.plan = ck::prepare_kept(psprintf("SELECT FROM %s WHERE %s ORDER BY %s %s%s", t.rows_sql,
                                                   ck::key_in_array_sql(k, p.key_type, 1), k.sql,
                                                   call.mode->clause, nowait),
                                          1, types);
                return;
            }
            // The distinct keys in order, then one routed statement per key.
            p.plan = ck::prepare_kept("SELECT DISTINCT u.k FROM pg_catalog.unnest($1) AS u(k) ORDER BY u.k", 1, types);
            Oid element[1] = {get_element_type(p.key_type)};
            p.each_plan = ck::prepare_kept(psprintf("SELECT FROM %s WHERE %s %s%s", t.rows_sql,
                                                    ck::key_match_sql(k, element[0], 1), call.mode->clause, nowait),
                                           1, element);
        });
        p.table = ck::pg_call([&] { return get_rel_name(call.relid); });
        return p;
    });
    ck::resolve_key(prepared, &call.keys, &call.keys_type);
    return prepared;
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

// Runs plan, its whole run bounded by the lock-timeout timer when bound_ms > 0 (it raises
// 55P03 wherever the statement waits). Returns the rows processed. Inside pg_call.
uint64 run_bounded(SPIPlanPtr plan, Datum *values, int bound_ms)
{
    if (bound_ms > 0)
        enable_timeout_after(LOCK_TIMEOUT, bound_ms);
    volatile int rc = 0;
    PG_TRY();
    {
        rc = SPI_execute_plan(plan, values, nullptr, false, 0);
    }
    PG_FINALLY();
    {
        if (bound_ms > 0)
            disable_timeout(LOCK_TIMEOUT, false);
    }
    PG_END_TRY();
    if (rc < 0)
        elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));
    uint64 processed = SPI_processed;
    SPI_freetuptable(SPI_tuptable);
    return processed;
}

// On a Citus table: the statement, or on a distributed table one statement per key in key
// order, each bounded by what is left of ms (ms < 0: by lock_timeout, as a local wait is;
// ms = 0: NOWAIT, in the statement).
uint64 lock_on_citus(const LockPlan &p, Datum *values, int ms)
{
    ck::PlanExecution executing;
    return ck::pg_call([&] {
        int nest = ms > 0 ? ck::push_lock_timeout(ms) : 0;   // for waits on this node
        TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);
        auto bound = [&] {
            if (ms > 0)
                return std::max(1, static_cast<int>((deadline - GetCurrentTimestamp()) / 1000));
            return ms < 0 ? LockTimeout : 0;
        };
        uint64 locked = 0;
        if (p.each_plan == nullptr) {
            locked = run_bounded(p.plan, values, bound());
        } else {
            Portal portal = SPI_cursor_open(nullptr, p.plan, values, nullptr, true);
            for (;;) {
                SPI_cursor_fetch(portal, true, 1);
                if (SPI_processed == 0)
                    break;
                SPITupleTable *row = SPI_tuptable;
                bool isnull;
                Datum key[1] = {SPI_getbinval(row->vals[0], row->tupdesc, 1, &isnull)};
                locked += run_bounded(p.each_plan, key, bound());
                SPI_freetuptable(row);
            }
            SPI_cursor_close(portal);
        }
        if (ms > 0)
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
    if (call.keys_type != UNKNOWNOID && !OidIsValid(ck::pg_call([&] { return get_element_type(call.keys_type); })))
        throw ck::Error(ERRCODE_DATATYPE_MISMATCH,
                        ck::fmt("keys must be an array, not %s",
                                ck::pg_call([&] { return format_type_be(call.keys_type); })),
                        "", "Pass the keys as an array: ARRAY[1, 2] or '{A1,B2}'.");

    ck::spi_connect();
    const LockPlan &p = prepared(call);
    if (ck::pg_call([&] { return array_contains_nulls(DatumGetArrayTypeP(call.keys)); }))
        throw ck::Error(ERRCODE_NULL_VALUE_NOT_ALLOWED, "keys must not contain NULL",
                        "A NULL key matches no row: the lock it asks for would silently not be taken.");
    Datum values[1] = {call.keys};
    uint64 locked;
    try {
        if (p.citus)
            locked = lock_on_citus(p, values, call.ms);
        else
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
    ck::warn_outside_transaction_block("ck.lock_rows");
    PG_RETURN_INT64(static_cast<int64>(locked));
}
