// The ExecutorStart hook that records unlocked reads. A SELECT under READ COMMITTED records
// every plain table it reads, with a copy of its snapshot and its text; a table it locks rows
// of (FOR UPDATE, FOR NO KEY UPDATE, FOR SHARE, FOR KEY SHARE) is forgotten, since the rows
// it read cannot change before this transaction ends. Statements the extension runs itself
// are not reads of the caller's (they are correct by construction). The entries live in
// TopMemoryContext and are reused: a transaction of a million reads keeps one per table.
#include "races/reads.hpp"
#include "races/mode.hpp"
#include "base/spi.hpp"
#include "base/statement_text.hpp"

extern "C" {
#include "access/transam.h"
#include "executor/executor.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

#include <cstring>

namespace ck {

namespace {

constexpr int max_tables = 32;   // tables remembered per transaction; the oldest read makes room
RaceRead *entries = nullptr;     // max_tables of them, in TopMemoryContext
int used = 0;
uint64 clock = 0;
ExecutorStart_hook_type prev_executor_start = nullptr;

RaceRead *find(Oid relid)
{
    for (int i = 0; i < used; i++)
        if (entries[i].relid == relid)
            return &entries[i];
    return nullptr;
}

void forget(Oid relid)
{
    RaceRead *e = find(relid);
    if (e != nullptr)
        e->relid = InvalidOid;   // the slot and its arrays stay for the next table
}

// Copies a snapshot's arrays into the entry's own, grown when too short.
TransactionId *copy_xids(TransactionId *own, uint32 *room, const TransactionId *from, uint32 n)
{
    if (n > *room) {
        uint32 grown = Max(n, 2 * *room);
        own = own == nullptr
                  ? static_cast<TransactionId *>(MemoryContextAlloc(TopMemoryContext, grown * sizeof(TransactionId)))
                  : static_cast<TransactionId *>(repalloc(own, grown * sizeof(TransactionId)));
        *room = grown;
    }
    if (n > 0)
        memcpy(own, from, n * sizeof(TransactionId));
    return own;
}

void remember(Oid relid, Snapshot snap, const char *text)
{
    RaceRead *e = find(relid);
    if (e == nullptr) {
        for (int i = 0; i < used && e == nullptr; i++)
            if (entries[i].relid == InvalidOid)
                e = &entries[i];
    }
    if (e == nullptr && used < max_tables)
        e = &entries[used++];
    if (e == nullptr) {
        e = &entries[0];
        for (int i = 1; i < used; i++)
            if (entries[i].order < e->order)
                e = &entries[i];
    }
    TransactionId *xip = e->snapshot.xip, *subxip = e->snapshot.subxip;
    e->snapshot = *snap;   // the plain fields; the arrays are copied into the entry's
    e->snapshot.xip = copy_xids(xip, &e->xip_room, snap->xip, snap->xcnt);
    e->snapshot.subxip = copy_xids(subxip, &e->subxip_room, snap->subxip, static_cast<uint32>(Max(snap->subxcnt, 0)));
    e->relid = relid;
    e->order = ++clock;
    memcpy(e->text, text, race_text_size);
}

bool locks_rows(PlannedStmt *stmt, Index rti)
{
    ListCell *lc;
    foreach (lc, stmt->rowMarks) {
        PlanRowMark *mark = static_cast<PlanRowMark *>(lfirst(lc));
        if (mark->rti == rti && RowMarkRequiresRowShareLock(mark->markType))
            return true;
    }
    return false;
}

void note_reads(QueryDesc *qd)
{
    PlannedStmt *stmt = qd->plannedstmt;
    char text[race_text_size];
    text[0] = '\0';
    Index rti = 0;
    ListCell *lc;
    foreach (lc, stmt->rtable) {
        rti++;
        RangeTblEntry *rte = static_cast<RangeTblEntry *>(lfirst(lc));
        if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION || rte->relid < FirstNormalObjectId)
            continue;
        if (locks_rows(stmt, rti)) {
            forget(rte->relid);
            continue;
        }
        if (text[0] == '\0')
            statement_text(text, sizeof text, qd->sourceText, stmt->stmt_location, stmt->stmt_len);
        remember(rte->relid, qd->snapshot, text);
    }
}

void on_executor_start(QueryDesc *qd, int eflags)
{
    if (prev_executor_start != nullptr)
        prev_executor_start(qd, eflags);
    else
        standard_ExecutorStart(qd, eflags);
    if (!race_detector_watching() || qd->operation != CMD_SELECT || (eflags & EXEC_FLAG_EXPLAIN_ONLY) ||
        qd->plannedstmt->hasModifyingCTE || qd->snapshot == nullptr || !IsMVCCSnapshot(qd->snapshot) ||
        plans_executing() > 0)
        return;
    note_reads(qd);
}

void on_xact(XactEvent event, void *)
{
    // A new transaction starts with no reads; the entries' arrays are kept for it.
    used = 0;
}

} // namespace

const RaceRead *race_read_of(Oid relid)
{
    return relid == InvalidOid ? nullptr : find(relid);
}

void race_reads_init()
{
    entries = static_cast<RaceRead *>(MemoryContextAllocZero(TopMemoryContext, max_tables * sizeof(RaceRead)));
    prev_executor_start = ExecutorStart_hook;
    ExecutorStart_hook = on_executor_start;
    RegisterXactCallback(on_xact, nullptr);
}

} // namespace ck
