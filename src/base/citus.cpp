// Citus detection (citus.hpp): one row of pg_dist_partition per Citus table; its columns are found by name.
#include "base/citus.hpp"

#include <dlfcn.h>

extern "C" {
#include "access/genam.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "commands/extension.h"
#include "nodes/primnodes.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
}

namespace ck {

namespace {

// The attribute number of column name in the relation rel (0 when absent).
AttrNumber attribute(Relation rel, const char *name)
{
    TupleDesc desc = RelationGetDescr(rel);
    for (int i = 0; i < desc->natts; i++)
        if (!TupleDescAttr(desc, i)->attisdropped && strcmp(NameStr(TupleDescAttr(desc, i)->attname), name) == 0)
            return i + 1;
    return InvalidAttrNumber;
}

} // namespace

bool citus_installed()
{
    return OidIsValid(get_extension_oid("citus", true));
}

CitusTable citus_table(Oid relid)
{
    CitusTable result{CitusKind::none, InvalidAttrNumber};
    if (!citus_installed())
        return result;
    Oid catalog = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
    if (!OidIsValid(catalog))
        return result;
    Relation rel = table_open(catalog, AccessShareLock);
    AttrNumber relid_att = attribute(rel, "logicalrelid"), method_att = attribute(rel, "partmethod"),
               key_att = attribute(rel, "partkey"), model_att = attribute(rel, "repmodel");
    if (relid_att == InvalidAttrNumber || method_att == InvalidAttrNumber || key_att == InvalidAttrNumber ||
        model_att == InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_catalog.pg_dist_partition lacks a column concurrency_kit reads"),
                        errdetail("It needs logicalrelid, partmethod, partkey and repmodel (Citus 11 to 14 have them).")));
    ScanKeyData key;
    ScanKeyInit(&key, relid_att, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
    SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, nullptr, 1, &key);
    HeapTuple tuple = systable_getnext(scan);
    if (HeapTupleIsValid(tuple)) {
        TupleDesc desc = RelationGetDescr(rel);
        bool null;
        char method = DatumGetChar(heap_getattr(tuple, method_att, desc, &null));
        char model = DatumGetChar(heap_getattr(tuple, model_att, desc, &null));
        Datum partkey = heap_getattr(tuple, key_att, desc, &null);
        if (method == 'n') {
            // 't': replicated to every node (a reference table); else one shard placement.
            result.kind = model == 't' ? CitusKind::reference : CitusKind::single_shard;
        } else if (!null) {
            // partkey is the distribution column as a Var, in the server's node text form.
            Node *node = (Node *) stringToNode(TextDatumGetCString(partkey));
            if (!IsA(node, Var))
                ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                                errmsg("the distribution key of table \"%s\" is not a column", get_rel_name(relid))));
            result.kind = CitusKind::distributed;
            result.column = ((Var *) node)->varattno;
        }
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return result;
}

namespace {

emit_log_hook_type citus_log_hook = nullptr;   // Citus's emit_log_hook, when noted by citus_note_log_hook

} // namespace

void citus_note_log_hook()
{
    // Citus keeps whether its deadlock detector cancelled a backend in its own shared memory, and
    // its library hides the function that reads it (PostgreSQL 16+ builds modules with hidden
    // symbols). Its emit_log_hook reads it: a function of citus.so, told apart by the file that
    // holds its code.
    Dl_info info;
    if (emit_log_hook == nullptr || dladdr(reinterpret_cast<void *>(emit_log_hook), &info) == 0 ||
        info.dli_fname == nullptr)
        return;
    const char *file = strrchr(info.dli_fname, '/');
    file = file == nullptr ? info.dli_fname : file + 1;
    if (strcmp(file, "citus.so") == 0)
        citus_log_hook = emit_log_hook;
}

bool citus_cancelled_for_deadlock()
{
    if (citus_log_hook == nullptr)
        return false;
    // Citus's hook rewrites a reported 57014 into 40P01 when its detector cancelled this
    // transaction (and clears the mark). The probe goes nowhere: neither to the server log nor to
    // the client (a hook loaded before Citus, which Citus calls on, sees it so).
    ErrorData probe{};
    probe.elevel = ERROR;
    probe.sqlerrcode = ERRCODE_QUERY_CANCELED;
    probe.message = const_cast<char *>("canceling statement due to user request");
    probe.output_to_server = false;
    probe.output_to_client = false;
    pg_call([&] { citus_log_hook(&probe); });
    return probe.sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED;
}

} // namespace ck
