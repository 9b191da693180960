// ck_internal.race_check: the test the planner puts into the scan of an UPDATE that
// overwrites columns with values computed from no column of the row (races/overwrite.cpp).
// It runs on each row the UPDATE is about to change, the version it found first and, when the
// UPDATE waited for another writer, the version that writer committed (EvalPlanQual re-runs
// the scan's tests on it). The row is lost to an overwrite when its version was committed by
// another transaction after this one's latest unlocked read of the table: that read's
// snapshot still saw the transaction as running or not yet begun (XidInMVCCSnapshot).
// It always lets the row through; at 'error' it raises CK008 instead.
//
// Each row is reported once per statement, the first time it is found lost.
#include "base/boundary.hpp"
#include "base/errcodes.hpp"
#include "base/relation.hpp"
#include "base/spi.hpp"
#include "races/mode.hpp"
#include "races/reads.hpp"
#include "races/reports.hpp"

extern "C" {
#include "access/table.h"
#include "access/tableam.h"
#include "common/hashfn.h"
#include "access/transam.h"
#include "executor/tuptable.h"
#include "nodes/bitmapset.h"
#include "storage/bufmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include <cstring>

namespace {

// The rows reported by the statement under way (its transaction and command id), so that a
// row found again (a later version, after another wait) is not reported twice.
constexpr int remembered = 16;
struct Reported {
    LocalTransactionId lxid = InvalidLocalTransactionId;
    CommandId cid = InvalidCommandId;
    int n = 0;
    uint32 rows[remembered];   // hashes of table and key
} reported;

LocalTransactionId current_lxid()
{
#if PG_VERSION_NUM >= 170000
    return MyProc->vxid.lxid;
#else
    return MyProc->lxid;
#endif
}

// True the first time this statement meets the row (table, key).
bool first_report(Oid relid, const char *key)
{
    CommandId cid = GetCurrentCommandId(false);
    if (reported.lxid != current_lxid() || reported.cid != cid) {
        reported.lxid = current_lxid();
        reported.cid = cid;
        reported.n = 0;
    }
    uint32 h = hash_bytes_uint32(relid) ^ hash_bytes(reinterpret_cast<const unsigned char *>(key), strlen(key));
    for (int i = 0; i < reported.n && i < remembered; i++)
        if (reported.rows[i] == h)
            return false;
    reported.rows[reported.n++ % remembered] = h;
    return true;
}

void append(char *out, size_t size, const char *s)
{
    size_t used = strlen(out);
    if (used + 1 < size)
        strlcpy(out + used, s, size - used);
}

// "(id)=(7)" from the version at tid (the key columns of the primary key, in column order),
// else the tid itself. Plain C: it may raise.
void describe_key(Relation rel, ItemPointer tid, char *out, size_t size)
{
    out[0] = '\0';
    Bitmapset *keys = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_PRIMARY_KEY);
    // A tid from a hand-made call may name no page of the table (InvalidBlockNumber would even
    // extend it): only the plan's own tids are read.
    bool readable = ItemPointerIsValid(tid) && ItemPointerGetBlockNumber(tid) < RelationGetNumberOfBlocks(rel);
    TupleTableSlot *slot = table_slot_create(rel, nullptr);
    if (keys != nullptr && readable && table_tuple_fetch_row_version(rel, tid, SnapshotAny, slot)) {
        char names[128] = "(", values[128] = "(";
        int member = -1;
        bool first = true;
        while ((member = bms_next_member(keys, member)) >= 0) {
            AttrNumber att = member + FirstLowInvalidHeapAttributeNumber;
            Form_pg_attribute a = TupleDescAttr(RelationGetDescr(rel), att - 1);
            bool isnull;
            Datum d = slot_getattr(slot, att, &isnull);
            const char *value = isnull ? "null" : ck::value_text(d, a->atttypid);
            if (!first) {
                append(names, sizeof names, ", ");
                append(values, sizeof values, ", ");
            }
            append(names, sizeof names, quote_identifier(NameStr(a->attname)));
            append(values, sizeof values, value);
            first = false;
        }
        snprintf(out, size, "%s)=%s)", names, values);
    } else {
        snprintf(out, size, "(ctid)=(%u,%u)", ItemPointerGetBlockNumberNoCheck(tid),
                 ItemPointerGetOffsetNumberNoCheck(tid));
    }
    ExecDropSingleTupleTableSlot(slot);
}

// What fits the write: a computed change for one overwritten number, a version check where
// the table has a version column, else a lock on the read; SERIALIZABLE fits every case.
const char *fix_for(Relation rel, const char *columns)
{
    TupleDesc desc = RelationGetDescr(rel);
    bool has_version = false;
    bool one_number = false;
    for (int i = 0; i < desc->natts; i++) {
        Form_pg_attribute a = TupleDescAttr(desc, i);
        if (a->attisdropped)
            continue;
        if (strcmp(NameStr(a->attname), "version") == 0)
            has_version = true;
        if (strcmp(quote_identifier(NameStr(a->attname)), columns) == 0 &&
            (a->atttypid == INT2OID || a->atttypid == INT4OID || a->atttypid == INT8OID || a->atttypid == NUMERICOID))
            one_number = true;
    }
    if (one_number)
        return "Compute the new value in the UPDATE from the row's current one (SET n = n - $1 WHERE n >= $1, or "
               "ck.try_decrement), lock the row when reading it (SELECT ... FOR NO KEY UPDATE), or run the "
               "transaction at SERIALIZABLE with CALL ck.retry.";
    if (has_version)
        return "Check the version read in the UPDATE (ck.update_if_version), lock the row when reading it (SELECT "
               "... FOR NO KEY UPDATE), or run the transaction at SERIALIZABLE with CALL ck.retry.";
    return "Lock the row when reading it (SELECT ... FOR NO KEY UPDATE), add a version column and check it "
           "(ck.update_if_version), or run the transaction at SERIALIZABLE with CALL ck.retry.";
}

} // namespace

// ck_internal.race_check(relid, row_xmin, row_ctid, write_statement, columns): true.
CK_FUNCTION(ck_race_check)
{
    if (!ck::race_detector_watching() || ck::plans_executing() > 0 || PG_ARGISNULL(0) || PG_ARGISNULL(1) ||
        PG_ARGISNULL(2))
        return BoolGetDatum(true);
    Oid relid = PG_GETARG_OID(0);
    TransactionId xmin = DatumGetTransactionId(PG_GETARG_DATUM(1));
    const ck::RaceRead *read = ck::race_read_of(relid);
    if (read == nullptr || !TransactionIdIsNormal(xmin))
        return BoolGetDatum(true);
    bool lost = ck::pg_call([&] {
        if (TransactionIdIsCurrentTransactionId(xmin))
            return false;
        // A read snapshot whose subtransactions overflowed needs pg_subtrans for xmin, which
        // may be gone for an xid older than this transaction's own horizon: not judged.
        if (read->snapshot.suboverflowed && TransactionIdPrecedes(xmin, TransactionXmin))
            return false;
        return XidInMVCCSnapshot(xmin, const_cast<Snapshot>(&read->snapshot));
    });
    if (!lost)
        return BoolGetDatum(true);

    ck::RaceReport r;
    memset(&r, 0, sizeof r);
    const char *fix = nullptr;
    bool first = ck::pg_call([&] {
        Relation rel = table_open(relid, NoLock);   // the UPDATE holds its lock
        describe_key(rel, reinterpret_cast<ItemPointer>(DatumGetPointer(PG_GETARG_DATUM(2))), r.key, sizeof r.key);
        snprintf(r.table, sizeof r.table, "%s",
                 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)), RelationGetRelationName(rel)));
        if (!PG_ARGISNULL(4))
            text_to_cstring_buffer(PG_GETARG_TEXT_PP(4), r.columns, sizeof r.columns);
        fix = fix_for(rel, r.columns);
        table_close(rel, NoLock);
        return first_report(relid, r.key);
    });
    if (!first)
        return BoolGetDatum(true);
    r.at = GetCurrentTimestamp();
    r.pid = MyProcPid;
    r.database = MyDatabaseId;
    r.role = GetUserId();
    r.changed_by = xmin;
    r.level = ck::race_mode;
    strlcpy(r.read, read->text, sizeof r.read);
    if (!PG_ARGISNULL(3))
        ck::pg_call([&] { text_to_cstring_buffer(PG_GETARG_TEXT_PP(3), r.write, sizeof r.write); });
    ck::pg_call([&] { ck::race_report_keep(r); });

    std::string message = ck::fmt("lost update: row %s of %s was changed by another transaction after this one read "
                                  "the table without a lock",
                                  r.key, r.table);
    std::string detail = ck::fmt("Transaction %u committed the row's current version after the read \"%s\"; the write "
                                 "\"%s\" sets %s to values not computed from it, so that change is lost.",
                                 xmin, r.read, r.write, r.columns);
    if (ck::race_mode == ck::RACE_ERROR)
        throw ck::Error(CK_ERRCODE_LOST_UPDATE, message, detail, fix);
    int level = ck::race_mode == ck::RACE_WARNING ? WARNING : LOG;
    ck::pg_call([&] {
        ereport(level, (errcode(CK_ERRCODE_LOST_UPDATE), errmsg("%s", message.c_str()),
                        errdetail("%s", detail.c_str()), errhint("%s", fix)));
    });
    return BoolGetDatum(true);
}
