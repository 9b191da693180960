// ck.lock_namespace and the per-backend cache of namespace numbers.
#include "lock_namespace.hpp"
#include "args.hpp"
#include "guc_scope.hpp"
#include "plan_cache.hpp"
#include "spi.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "utils/acl.h"
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

const Prepared &statement(StatementKind kind)
{
    PlanKey key(kind, InvalidOid, InvalidOid, "", nullptr);
    // Every name is schema-qualified: these functions run with the caller's search_path.
    return prepare_once(key, [&] {
        Prepared p;
        Oid types[1] = {TEXTOID};
        const char *sql = kind == StatementKind::NamespaceLookup
            ? "SELECT id FROM ck.lock_namespaces WHERE name OPERATOR(pg_catalog.=) $1"
            : "INSERT INTO ck.lock_namespaces (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id";
        p.plan = pg_call([&] { return prepare_kept(sql, 1, types); });
        return p;
    });
}

// Runs the lookup or the registration; true with *number when a row came back.
bool run(StatementKind kind, Datum name, int32 *number)
{
    Datum values[1] = {name};
    if (execute_plan(statement(kind).plan, values, nullptr, Snap::Fresh) == 0)
        return false;
    bool isnull;
    *number = DatumGetInt32(result_datum(0, 1, &isnull));
    return true;
}

} // namespace

int32 lock_namespace_number(const char *name, int wait_ms)
{
    std::string key(name);
    if (auto it = committed.find(key); it != committed.end()) {
        require_registry_read();
        return it->second;
    }
    if (auto it = pending.find(key); it != pending.end()) {
        require_registry_read();
        return it->second;
    }
    if (key.empty() || key.size() > max_name_bytes)
        throw Error(ERRCODE_INVALID_PARAMETER_VALUE,
                    fmt("a lock namespace name must have 1 to %zu bytes, got %zu", max_name_bytes, key.size()));

    Datum text = pg_call([&] { return PointerGetDatum(cstring_to_text(name)); });
    int32 number;
    spi_connect();
    // Look first (no write for a known name); register if missing; a concurrent first use
    // that won the insert is found by the second look (READ COMMITTED sees it once committed).
    bool found = run(StatementKind::NamespaceLookup, text, &number);
    if (!found) {
        // The insert waits for a concurrent, uncommitted registration of the same name:
        // bounded by the caller's timeout when there is one, else by lock_timeout.
        int nest = wait_ms >= 0 ? pg_call([&] { return push_lock_timeout(wait_ms); }) : -1;
        try {
            found = run(StatementKind::NamespaceRegister, text, &number);
        } catch (const PgError &e) {
            ErrorData *edata = e.data();
            if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
                pg_call([&] {
                    edata->message = psprintf("lock namespace \"%s\" is being registered by another transaction",
                                              name);
                    edata->detail = wait_ms >= 0 ? psprintf("Not committed within %d ms.", wait_ms)
                                                 : pstrdup("Not committed within lock_timeout.");
                    edata->hint = pstrdup("Register namespaces up front with ck.lock_namespace() and commit.");
                });
            throw;
        }
        if (nest >= 0)
            pg_call([&] { pop_settings(nest); });
        found = found || run(StatementKind::NamespaceLookup, text, &number);
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
    PG_RETURN_INT32(ck::lock_namespace_number(name));
}
