// The hand-over in place: what the HandOver statement does (store/statements.cpp), done with the table
// and index access methods, as logical replication applies a row. It runs at every departure of
// a limited key, and as a statement its plan check, executor start and end cost as much as its
// work. Taken only where the statement would do nothing more: the queue a plain table (no
// partition, no row security, no CHECK constraint, no generated column), with no UPDATE
// trigger but ck_changed (which does nothing under our own statements), and the caller allowed
// to select and update the whole queue and to read ck.concurrency_slots (whose row policy then
// shows every row of the queue). Anywhere else the statement runs (and raises what it raises).
#include "queue/rules/handover.hpp"
#include "queue/rules/limits.hpp"
#include "queue/store/place.hpp"

extern "C" {
#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "rewrite/rowsecurity.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include <algorithm>

// PostgreSQL 18 gave index_beginscan an instrumentation argument, 19 scan flags too.
#if PG_VERSION_NUM >= 190000
#define ck_index_beginscan(heap, index, snapshot, nkeys) index_beginscan(heap, index, snapshot, nullptr, nkeys, 0, SO_NONE)
#elif PG_VERSION_NUM >= 180000
#define ck_index_beginscan(heap, index, snapshot, nkeys) index_beginscan(heap, index, snapshot, nullptr, nkeys, 0)
#else
#define ck_index_beginscan(heap, index, snapshot, nkeys) index_beginscan(heap, index, snapshot, nkeys, 0)
#endif

// PostgreSQL 18 added virtual generated columns (an UPDATE checks their constraints).
#if PG_VERSION_NUM >= 180000
#define ck_has_generated(constr) ((constr)->has_generated_stored || (constr)->has_generated_virtual)
#else
#define ck_has_generated(constr) ((constr)->has_generated_stored)
#endif

namespace ck {

namespace {

// Plain C from here to hand_over_in_place: it runs inside one pg_call.

// The queue's columns the hand-over reads and writes, of the types it reads them as (waiting_for:
// 0 on a queue made before 0.3.1).
struct Columns {
    AttrNumber key, priority, parked, id, run_at, waiting;
};

// Whether an UPDATE statement of rel would do what ExecSimpleRelationUpdate does and no more.
bool plain_table(Relation rel, const Columns &c)
{
    if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition || rel->rd_rel->relrowsecurity)
        return false;
    TupleConstr *constr = rel->rd_att->constr;
    if (constr != nullptr && (constr->num_check > 0 || ck_has_generated(constr)))
        return false;
    if (TupleDescAttr(rel->rd_att, c.parked - 1)->attnotnull)
        return false;   // the statement raises the violation
    TriggerDesc *t = rel->trigdesc;
    for (int i = 0; t != nullptr && i < t->numtriggers; i++)
        if (TRIGGER_FOR_UPDATE(t->triggers[i].tgtype) && strcmp(t->triggers[i].tgname, "ck_changed") != 0)
            return false;
    return true;
}

void equal_key(ScanKey k, Relation index, int column, RegProcedure eq, Datum value)
{
    ScanKeyEntryInitialize(k, 0, column, BTEqualStrategyNumber, InvalidOid, index->rd_indcollation[column - 1], eq, value);
}

// ck.concurrency_slots shows a row to whoever may write to its queue (its one policy, ours): to
// this caller, who may update the queue, every row of it.
bool slots_visible(Relation slots)
{
    if (!slots->rd_rel->relrowsecurity)
        return true;
    RowSecurityDesc *security = slots->rd_rsdesc;
    return security != nullptr && list_length(security->policies) == 1 &&
           strcmp(static_cast<RowSecurityPolicy *>(linitial(security->policies))->policy_name,
                  "concurrency_slots_writer") == 0;
}

// The key's free slots, read as the statement's one-time filter reads them: false without a row.
bool read_free(Relation slots, Oid queue, Datum key, Snapshot snapshot, int32 *free)
{
    list_free(RelationGetIndexList(slots));   // sets rd_pkindex: (queue, concurrency_key)
    AttrNumber free_col = job_column(RelationGetDescr(slots), "free", INT4OID);
    if (!OidIsValid(slots->rd_pkindex) || free_col == InvalidAttrNumber)
        return false;
    Relation pk = index_open(slots->rd_pkindex, AccessShareLock);
    ScanKeyData keys[2];
    equal_key(&keys[0], pk, 1, F_OIDEQ, ObjectIdGetDatum(queue));
    equal_key(&keys[1], pk, 2, F_TEXTEQ, key);
    IndexScanDesc scan = ck_index_beginscan(slots, pk, snapshot, 2);
    index_rescan(scan, keys, 2, nullptr, 0);
    TupleTableSlot *row = table_slot_create(slots, nullptr);
    bool found = index_getnext_slot(scan, ForwardScanDirection, row);
    bool isnull = true;
    if (found)
        *free = DatumGetInt32(slot_getattr(row, free_col, &isnull));
    ExecDropSingleTupleTableSlot(row);
    index_endscan(scan);
    index_close(pk, NoLock);
    return found && !isnull;
}

// The parking index, among the queue's open indexes: (concurrency_key, priority, parked_run_at, id).
Relation parking_index(ResultRelInfo *rri, const Columns &c)
{
    for (int i = 0; i < rri->ri_NumIndices; i++) {
        Relation index = rri->ri_IndexRelationDescs[i];
        int2vector *keys = &index->rd_index->indkey;
        if (index->rd_index->indnkeyatts == 4 && keys->values[0] == c.key && keys->values[1] == c.priority &&
            keys->values[2] == c.parked && keys->values[3] == c.id)
            return index;
    }
    return nullptr;
}

// The oldest parked job of the key that no other transaction holds, locked FOR UPDATE into
// `locked`. A job changed since the snapshot is passed over (the statement would follow it to
// its new version): at worst the departure takes the locked way, which looks again.
bool pick(Relation rel, Relation index, const Columns &c, Datum key, Snapshot snapshot, CommandId cid,
          TupleTableSlot *locked)
{
    ScanKeyData k;
    equal_key(&k, index, 1, F_TEXTEQ, key);
    IndexScanDesc scan = ck_index_beginscan(rel, index, snapshot, 1);
    index_rescan(scan, &k, 1, nullptr, 0);
    TupleTableSlot *seen = table_slot_create(rel, nullptr);
    bool picked = false;
    while (!picked && index_getnext_slot(scan, ForwardScanDirection, seen)) {
        bool not_parked, not_waiting = true;
        (void) slot_getattr(seen, c.parked, &not_parked);
        if (c.waiting != InvalidAttrNumber)
            (void) slot_getattr(seen, c.waiting, &not_waiting);
        if (not_parked || !not_waiting)
            continue;   // a job still waiting for its dependencies is not the key's to move
        TM_FailureData failure;
        picked = table_tuple_lock(rel, &seen->tts_tid, snapshot, locked, cid, LockTupleExclusive, LockWaitSkip, 0,
                                  &failure) == TM_Ok;
    }
    ExecDropSingleTupleTableSlot(seen);
    index_endscan(scan);
    return picked;
}

// The parked job unparked: ready from now, or from its own run_at if later.
void unpark(ResultRelInfo *rri, EState *estate, const Columns &c, TupleTableSlot *locked, Datum now, JobPlace *ready)
{
    Relation rel = rri->ri_RelationDesc;
    TupleDesc desc = RelationGetDescr(rel);
    TupleTableSlot *updated = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
    slot_getallattrs(locked);
    ExecClearTuple(updated);
    memcpy(updated->tts_values, locked->tts_values, desc->natts * sizeof(Datum));
    memcpy(updated->tts_isnull, locked->tts_isnull, desc->natts * sizeof(bool));
    TimestampTz parked = DatumGetTimestampTz(locked->tts_values[c.parked - 1]);
    ready->place.run_at = std::max(parked, DatumGetTimestampTz(now));
    updated->tts_values[c.run_at - 1] = TimestampTzGetDatum(ready->place.run_at);
    updated->tts_values[c.parked - 1] = (Datum) 0;
    updated->tts_isnull[c.parked - 1] = true;
    ExecStoreVirtualTuple(updated);
    ready->priority = DatumGetInt32(locked->tts_values[c.priority - 1]);
    ready->place.id = DatumGetInt64(locked->tts_values[c.id - 1]);
    ExecSimpleRelationUpdate(rri, estate, nullptr, locked, updated);
    ExecDropSingleTupleTableSlot(updated);
}

enum class InPlace { Handed, NotHanded, Statement };

InPlace hand_over_c(Oid queue, Datum key, Datum now, JobPlace *ready)
{
    Oid slots_id = get_relname_relid("concurrency_slots", get_namespace_oid("ck", true));
    Oid user = GetUserId();
    // (pg_class_aclcheck of several privileges asks for any of them.)
    if (!OidIsValid(slots_id) || pg_class_aclcheck(queue, user, ACL_SELECT) != ACLCHECK_OK ||
        pg_class_aclcheck(queue, user, ACL_UPDATE) != ACLCHECK_OK || pg_class_aclcheck(slots_id, user, ACL_SELECT) != ACLCHECK_OK)
        return InPlace::Statement;
    // Locks as the statement's, held to the end of the transaction.
    Relation rel = table_open(queue, RowExclusiveLock);
    Relation slots = table_open(slots_id, AccessShareLock);
    TupleDesc desc = RelationGetDescr(rel);
    Columns c{job_column(desc, "concurrency_key", TEXTOID), job_column(desc, "priority", INT4OID),
              job_column(desc, "parked_run_at", TIMESTAMPTZOID), job_column(desc, "id", INT8OID),
              job_column(desc, "run_at", TIMESTAMPTZOID), job_column(desc, "waiting_for", INT4OID)};
    InPlace result = InPlace::Statement;
    if (c.key != InvalidAttrNumber && c.priority != InvalidAttrNumber && c.parked != InvalidAttrNumber &&
        c.id != InvalidAttrNumber && c.run_at != InvalidAttrNumber && plain_table(rel, c) &&
        slots_visible(slots)) {
        EState *estate = CreateExecutorState();
        ResultRelInfo *rri = makeNode(ResultRelInfo);
        InitResultRelInfo(rri, rel, 0, nullptr, 0);
        ExecOpenIndices(rri, false);
        if (Relation index = parking_index(rri, c)) {
            // As a statement of SPI's: what the transaction did so far is seen, the latest commits too.
            CommandCounterIncrement();
            Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
            CommandId cid = GetCurrentCommandId(true);
            estate->es_snapshot = snapshot;
            estate->es_output_cid = cid;
            int32 free_slots;
            TupleTableSlot *locked = table_slot_create(rel, nullptr);
            result = InPlace::NotHanded;
            if (read_free(slots, queue, key, snapshot, &free_slots) && free_slots >= 0 &&
                pick(rel, index, c, key, snapshot, cid, locked)) {
                unpark(rri, estate, c, locked, now, ready);
                result = InPlace::Handed;
            }
            ExecDropSingleTupleTableSlot(locked);
            UnregisterSnapshot(snapshot);
            CommandCounterIncrement();
        }
        ExecCloseIndices(rri);
        FreeExecutorState(estate);
    }
    table_close(slots, NoLock);
    table_close(rel, NoLock);
    return result;
}

} // namespace

int hand_over_in_place(Oid queue, Datum key, Datum now)
{
    return pg_call([&] {
        JobPlace ready;
        InPlace done = hand_over_c(queue, key, now, &ready);
        if (done == InPlace::Statement)
            return -1;
        if (done == InPlace::Handed)
            job_made_ready(queue, ready);
        return done == InPlace::Handed ? 1 : 0;
    });
}

} // namespace ck
