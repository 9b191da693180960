// ck.lock_namespace and the per-backend cache of namespace numbers.
#include "locks/lock_namespace.hpp"
#include "base/args.hpp"
#include "base/plan_cache.hpp"
#include "base/spi.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "utils/acl.h"
#include "utils/varlena.h"
}

#include <string>
#include <unordered_map>

namespace ck {

namespace {

constexpr size_t max_name_bytes = 63;

// Numbers of names whose registration is committed: they never change.
std::unordered_map<std::string, int32> committed;
// Numbers this transaction registered or saw: trusted only once it commits, since a
// rolled-back registration frees the name for another number.
std::unordered_map<std::string, int32> pending;

void on_xact(XactEvent event, void *)
{
    if (event == XACT_EVENT_COMMIT) {
        for (auto &[name, number] : pending)
            committed.emplace(name, number);
        pending.clear();
    } else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE) {
        // A prepared transaction may yet roll back: its registrations are looked up again.
        pending.clear();
    }
}

// A cached number answers only a caller who may read the registry, as the lookup would.
void require_registry_read()
{
    pg_call([] {
        Oid registry = get_relname_relid("lock_namespaces", get_namespace_oid("ck", false));
        AclResult ok = pg_class_aclcheck(registry, GetUserId(), ACL_SELECT);
        if (ok != ACLCHECK_OK)
            aclcheck_error(ok, OBJECT_TABLE, "lock_namespaces");
    });
}

void on_subxact(SubXactEvent event, SubTransactionId, SubTransactionId, void *)
{
    if (event == SUBXACT_EVENT_ABORT_SUB)
        pending.clear();   // conservative: look them up again
}

// The statements of this file (plan_cache.hpp).
enum class Statement : uint8_t {
    NamespaceLookup,
    NamespaceRegister,
};

const Prepared &statement(Statement kind)
{
    PlanKey key(kind, InvalidOid, InvalidOid, "", nullptr);
    // Every name is schema-qualified: these functions run with the caller's search_path.
    return prepare_once(key, [&] {
        Prepared p;
        Oid types[1] = {TEXTOID};
        const char *sql = kind == Statement::NamespaceLookup
            ? "SELECT id FROM ck.lock_namespaces WHERE name OPERATOR(pg_catalog.=) $1"
            : "INSERT INTO ck.lock_namespaces (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id";
        p.plan = pg_call([&] { return prepare_kept(sql, 1, types); });
        return p;
    });
}

// Runs the lookup or the registration of name; true with *number when a row came back.
bool run(Statement kind, const char *name, int32 *number, Snap snap)
{
    Datum values[1] = {pg_call([&] { return PointerGetDatum(cstring_to_text(name)); })};
    if (execute_plan(statement(kind).plan, values, nullptr, snap) == 0)
        return false;
    bool isnull;
    *number = DatumGetInt32(result_datum(0, 1, &isnull));
    return true;
}

// The number of a name this backend has seen, for a caller who may read the registry (true);
// false for a name to look up, once it is known to be one a namespace may have.
bool cached_number(const std::string &key, int32 *number)
{
    auto it = committed.find(key);
    if (it == committed.end() && (it = pending.find(key)) == pending.end()) {
        if (key.empty() || key.size() > max_name_bytes)
            throw Error(ERRCODE_INVALID_PARAMETER_VALUE,
                        fmt("a lock namespace name must have 1 to %zu bytes, got %zu", max_name_bytes, key.size()));
        return false;
    }
    require_registry_read();
    *number = it->second;
    return true;
}

// The registered name closest to name, within two edits (a typo); empty when none is. The
// error path of lock_namespace_find only: it reads the whole registry.
std::string closest_name(const std::string &name)
{
    const char *best = pg_call([&] {
        constexpr int max_edits = 2;
        int rc = SPI_execute("SELECT name FROM ck.lock_namespaces", true, 0);
        if (rc != SPI_OK_SELECT)
            elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
        const char *found = nullptr;
        int found_edits = max_edits + 1;
        for (uint64 i = 0; i < SPI_processed; i++) {
            const char *candidate = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
            int edits = varstr_levenshtein_less_equal(name.c_str(), static_cast<int>(name.size()), candidate,
                                                      static_cast<int>(strlen(candidate)), 1, 1, 1, max_edits,
                                                      false);
            if (edits < found_edits && edits < static_cast<int>(name.size())) {
                found = candidate;
                found_edits = edits;
            }
        }
        return found;
    });
    return best != nullptr ? best : "";
}

} // namespace

int32 lock_namespace_register(const char *name)
{
    std::string key(name);
    int32 number;
    if (cached_number(key, &number))
        return number;
    spi_connect();
    // Look first (no write for a known name); register if missing; a concurrent first use
    // that won the insert is found by the second look (READ COMMITTED sees it once committed).
    bool found = run(Statement::NamespaceLookup, name, &number, Snap::Fresh);
    if (!found) {
        // The insert waits for a concurrent, uncommitted registration of the same name, as
        // long as lock_timeout allows.
        try {
            found = run(Statement::NamespaceRegister, name, &number, Snap::Fresh);
        } catch (const PgError &e) {
            ErrorData *edata = e.data();
            if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
                pg_call([&] {
                    edata->message = psprintf("lock namespace \"%s\" is being registered by another transaction",
                                              name);
                    edata->detail = pstrdup("Not committed within lock_timeout.");
                    edata->hint = pstrdup("Register namespaces up front with ck.lock_namespace() and commit.");
                });
            throw;
        }
        found = found || run(Statement::NamespaceLookup, name, &number, Snap::Fresh);
    }
    spi_finish();
    if (!found)
        throw Error(ERRCODE_T_R_SERIALIZATION_FAILURE,
                    fmt("lock namespace \"%s\" was registered by a concurrent transaction", name),
                    "This transaction's snapshot is older than that registration.",
                    "Retry the transaction, or register namespaces under READ COMMITTED.");
    pending.emplace(key, number);
    return number;
}

int32 lock_namespace_find(const char *name)
{
    std::string key(name);
    int32 number;
    if (cached_number(key, &number))
        return number;
    spi_connect();
    // The latest snapshot, under REPEATABLE READ too: a name registered since this
    // transaction began (by a migration, say) exists.
    if (!run(Statement::NamespaceLookup, name, &number, Snap::Latest)) {
        std::string closest = closest_name(key);
        std::string create = pg_call([&] { return quote_literal_cstr(name); });
        std::string guess = closest.empty() ? "" : fmt("Did you mean \"%s\"? ", closest.c_str());
        throw Error(ERRCODE_UNDEFINED_OBJECT, fmt("lock namespace \"%s\" does not exist", name),
                    "A lock call does not create its namespace: a mistyped name would lock nothing anyone else locks.",
                    fmt("%sCreate a namespace once, e.g. in a migration: SELECT ck.lock_namespace(%s).", guess.c_str(),
                        create.c_str()));
    }
    spi_finish();
    pending.emplace(key, number);
    return number;
}

void lock_namespace_init()
{
    RegisterXactCallback(on_xact, nullptr);
    RegisterSubXactCallback(on_subxact, nullptr);
}

} // namespace ck

CK_FUNCTION(ck_lock_namespace)
{
    ck::require_arg(fcinfo, 0, "namespace name");
    const char *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
    PG_RETURN_INT32(ck::lock_namespace_register(name));
}
