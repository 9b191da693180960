// Advisory locks keyed by (namespace, key), both int4: PostgreSQL's own two-int advisory
// keys, so pg_advisory_xact_lock(ns, key) from any client excludes ck.xact_lock(ns, key).
// The key argument is bigint so that a bigint id needs no cast; it must fit in int4.
// ck.xact_lock, ck.try_xact_lock, ck.session_lock, ck.session_unlock,
// ck.session_unlock_all, ck.set_lock_timeout, and the session-lock bookkeeping behind
// ck.held_locks.
#include "base/args.hpp"
#include "base/citus.hpp"
#include "locks/lock_namespace.hpp"
#include "base/guc_scope.hpp"
#include "base/spi.hpp"

extern "C" {
#include "storage/lock.h"
#include "utils/guc.h"
}

#include <map>
#include <utility>

namespace {

// Session locks taken through ck.session_lock, with their counts: what ck.held_locks
// reports as scope 'session' (PostgreSQL does not expose a lock's scope).
std::map<std::pair<int32, int32>, int64> session_locks;

struct Target {
    int32 ns;
    int32 key;
    std::string label;   // "name:key" or "ns:key", for messages
};

// The key, argument 1: bigint in 1.0 (int4 in 0.x, whose Datum reads the same on the 64-bit
// platforms PostgreSQL 17+ runs on); it must fit in int4, the second half of the lock tag.
int32 key_arg(FunctionCallInfo fcinfo)
{
    if (PG_NARGS() <= 1)
        return 0;
    if (PG_ARGISNULL(1))
        throw ck::Error(ERRCODE_NULL_VALUE_NOT_ALLOWED, "lock key must not be NULL",
                        "A lock call that locks nothing would let two handlers run at once.");
    int64 key = PG_GETARG_INT64(1);
    if (key < PG_INT32_MIN || key > PG_INT32_MAX)
        throw ck::Error(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                        ck::fmt("lock key " INT64_FORMAT " is out of range: a key is an integer (int4)", key),
                        "An advisory lock's tag holds two int4: the namespace and the key.",
                        "For a bigint id, give each range of 2^31 ids a namespace of its own (name 'orders_' || "
                        "(id >> 31), key id & 2147483647), or use pg_advisory_xact_lock(id).");
    return static_cast<int32>(key);
}

// (ns, key) from arguments 0 and 1; ns may be int4 or text (the name of a namespace created
// with ck.lock_namespace).
Target target_args(FunctionCallInfo fcinfo, bool ns_is_name)
{
    if (PG_ARGISNULL(0))
        throw ck::Error(ERRCODE_NULL_VALUE_NOT_ALLOWED, "lock namespace must not be NULL");
    int32 key = key_arg(fcinfo);
    if (ns_is_name) {
        const char *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
        int32 ns = ck::lock_namespace_find(name);
        return {ns, key, ck::fmt("%s:%d", name, key)};
    }
    int32 ns = PG_GETARG_INT32(0);
    return {ns, key, ck::fmt("%d:%d", ns, key)};
}

LOCKTAG tag_of(const Target &t)
{
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(t.ns), static_cast<uint32>(t.key), 2);
    return tag;
}

// Milliseconds of a positive timeout argument (NULL: -1, wait without a bound).
int timeout_ms(FunctionCallInfo fcinfo, int argno)
{
    return ck::timeout_ms_arg(fcinfo, argno, false, "Use ck.try_xact_lock to take a lock only if it is free.");
}

// Waits for the lock; with a timeout, under lock_timeout set for this wait only (restored
// right after, and by (sub)transaction abort if the wait fails).
void acquire(const Target &t, bool session, int ms)
{
    LOCKTAG tag = tag_of(t);
    if (ms < 0) {
        ck::pg_call([&] { (void) LockAcquire(&tag, ExclusiveLock, session, false); });
        return;
    }
    try {
        ck::pg_call([&] {
            int nest = ck::push_lock_timeout(ms);
            (void) LockAcquire(&tag, ExclusiveLock, session, false);
            ck::pop_settings(nest);
        });
    } catch (const ck::PgError &e) {
        ErrorData *edata = e.data();
        if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
            throw;
        // Name the lock in the message; the SQLSTATE stays 55P03.
        ck::pg_call([&] {
            edata->message = psprintf("advisory lock %s not obtained within %d ms", t.label.c_str(), ms);
            edata->detail = pstrdup("Another session holds it; see ck.lock_waits().");
        });
        throw;
    }
}

bool try_acquire(const Target &t, bool session)
{
    LOCKTAG tag = tag_of(t);
    return ck::pg_call([&] { return LockAcquire(&tag, ExclusiveLock, session, true); }) != LOCKACQUIRE_NOT_AVAIL;
}

// Resolves the target and takes the lock, waiting at most the timeout (the lock is the only
// wait: a namespace is looked up, never registered, here).
void lock_within(FunctionCallInfo fcinfo, bool ns_is_name, bool session)
{
    int ms = timeout_ms(fcinfo, 2);
    Target t = target_args(fcinfo, ns_is_name);
    acquire(t, session, ms);
    if (session)
        session_locks[{t.ns, t.key}]++;
}

Datum xact_lock(FunctionCallInfo fcinfo, bool ns_is_name)
{
    lock_within(fcinfo, ns_is_name, false);
    ck::warn_outside_transaction_block("ck.xact_lock");
    PG_RETURN_VOID();
}

// A try never waits.
Datum try_xact_lock(FunctionCallInfo fcinfo, bool ns_is_name)
{
    Target t = target_args(fcinfo, ns_is_name);
    bool taken = try_acquire(t, false);
    ck::warn_outside_transaction_block("ck.try_xact_lock");
    PG_RETURN_BOOL(taken);
}

Datum session_lock(FunctionCallInfo fcinfo, bool ns_is_name)
{
    lock_within(fcinfo, ns_is_name, true);
    PG_RETURN_VOID();
}

Datum session_unlock(FunctionCallInfo fcinfo, bool ns_is_name)
{
    Target t = target_args(fcinfo, ns_is_name);
    auto it = session_locks.find({t.ns, t.key});
    if (it == session_locks.end())
        throw ck::Error(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                        ck::fmt("this session holds no session lock %s", t.label.c_str()),
                        "Session locks must be unlocked on the connection that took them, as many times as taken.",
                        "Behind a pooler, use transaction locks (ck.xact_lock).");
    LOCKTAG tag = tag_of(t);
    ck::pg_call([&] { (void) LockRelease(&tag, ExclusiveLock, true); });
    if (--it->second == 0)
        session_locks.erase(it);
    PG_RETURN_VOID();
}

} // namespace

CK_FUNCTION(ck_xact_lock) { return xact_lock(fcinfo, false); }
CK_FUNCTION(ck_xact_lock_name) { return xact_lock(fcinfo, true); }
CK_FUNCTION(ck_try_xact_lock) { return try_xact_lock(fcinfo, false); }
CK_FUNCTION(ck_try_xact_lock_name) { return try_xact_lock(fcinfo, true); }
CK_FUNCTION(ck_session_lock) { return session_lock(fcinfo, false); }
CK_FUNCTION(ck_session_lock_name) { return session_lock(fcinfo, true); }
CK_FUNCTION(ck_session_unlock) { return session_unlock(fcinfo, false); }
CK_FUNCTION(ck_session_unlock_name) { return session_unlock(fcinfo, true); }

CK_FUNCTION(ck_session_unlock_all)
{
    ck::pg_call([] { LockReleaseSession(USER_LOCKMETHOD); });
    session_locks.clear();
    PG_RETURN_VOID();
}

// ck.session_locks_held(): (ns, key, count) of the session locks taken through ck.
CK_FUNCTION(ck_session_locks_held)
{
    ReturnSetInfo *rsinfo = ck::pg_call([&] { return ck::begin_result_set(fcinfo); });
    for (const auto &[lock, count] : session_locks) {
        Datum values[3] = {Int32GetDatum(lock.first), Int32GetDatum(lock.second), Int64GetDatum(count)};
        bool nulls[3] = {false, false, false};
        ck::pg_call([&] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls); });
    }
    return (Datum) 0;
}

CK_FUNCTION(ck_set_lock_timeout)
{
    ck::require_arg(fcinfo, 0, "timeout");
    Interval *iv = PG_GETARG_INTERVAL_P(0);
    double usecs = ck::interval_usecs(iv);
    if (usecs < 0)
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE, "timeout must not be negative");
    if (!IsTransactionBlock())
        throw ck::Error(ERRCODE_NO_ACTIVE_SQL_TRANSACTION,
                        "ck.set_lock_timeout must be called inside a transaction block",
                        "Outside BEGIN ... COMMIT, SET LOCAL would end with this statement and change nothing.");
    int ms = usecs == 0 ? 0 : timeout_ms(fcinfo, 0);
    bool citus = ck::pg_call([&] {
        char value[32];
        snprintf(value, sizeof value, "%d", ms);
        (void) set_config_option("lock_timeout", value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
        return GetConfigOption("citus.propagate_set_commands", true, false) != nullptr && ck::citus_installed();
    });
    if (citus) {
        // Citus does not pass lock_timeout on to the workers, where a statement's row locks
        // wait; it passes a SET LOCAL when citus.propagate_set_commands is 'local', so one runs
        // here under that setting (the remote transactions of this one begin with it).
        int nest = ck::pg_call([] { return ck::push_settings({{"citus.propagate_set_commands", "local"}}); });
        ck::spi_connect();
        ck::execute_sql(ck::pg_call([&] { return psprintf("SET LOCAL lock_timeout = %d", ms); }));
        ck::spi_finish();
        ck::pg_call([&] { ck::pop_settings(nest); });
    }
    PG_RETURN_VOID();
}
