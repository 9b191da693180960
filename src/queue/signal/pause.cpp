// Pause and resume (pause.hpp). A pause must not let a claim commit after it, yet claims must
// not pay for pauses that never happen, and producers must not wait for a pause. So the claims
// read nothing new while no pause is in progress: one counter per slot of queues in the shared
// state (a pause in progress counts in its queue's slot from before it looks for claims in flight
// until after its invalidations are sent), read after the claim's lock on the queue is taken;
// the pause waits for the holders of that lock mode only (RowShareLock: claims take it, inserts
// do not). src/README.md, "Pause and resume", gives the argument.
#include "queue/signal/pause.hpp"
#include "base/boundary.hpp"
#include "base/shared_memory.hpp"
#include "queue/signal/wakeup.hpp"
#include "queue/store/rights.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/inval.h"
#include "utils/resowner.h"
}

namespace ck {

namespace {

constexpr uint32 slot_count = 256;

// The lock a pause holds (ExclusiveLock) to the end of its transaction, an object lock on the
// queue's pg_class entry with a subid of ck's own ("CK"): a claim that finds a pause counted
// in its slot tries it (ShareLock, without waiting) to tell its own queue's pause from another's.
constexpr uint16 pause_lock_subid = 0x434b;

struct Counters {
    pg_atomic_uint32 pausing[slot_count];
};

Counters *counters = nullptr;

// This transaction's pauses (the slots they counted in) and resumes (the queues to wake).
constexpr int max_per_transaction = 16;
uint32 counted[max_per_transaction];
Oid counted_queue[max_per_transaction];
int ncounted = 0;
Oid resumed[max_per_transaction];
int nresumed = 0;
bool resumed_many = false;   // past capacity: every slot is woken

ClaimGate last_gate = ClaimGate::Open;
bool held_before = false;   // ... and whether its transaction held the claims' lock before it

uint32 slot_of(Oid queue)
{
    return hash_combine(murmurhash32(MyDatabaseId), murmurhash32(queue)) % slot_count;
}

void init_counters(void *memory)
{
    Counters *made = static_cast<Counters *>(memory);
    for (uint32 i = 0; i < slot_count; i++)
        pg_atomic_init_u32(&made->pausing[i], 0);
}

// At the end of the top transaction, once its invalidations are sent (AtEOXact_Inval runs
// before the release of locks), committed or not: the pauses stop counting and wake their queues'
// waiters; a committed resume wakes its queue's, which then read the resumed settings.
void on_release(ResourceReleasePhase phase, bool is_commit, bool is_top_level, void *)
{
    if (phase != RESOURCE_RELEASE_LOCKS || !is_top_level)
        return;
    // claim_wait callers asleep while the pause was in progress look again: paused now, or not.
    for (int i = 0; i < ncounted; i++) {
        pg_atomic_fetch_sub_u32(&counters->pausing[counted[i]], 1);
        queue_wake_now(counted_queue[i]);
    }
    ncounted = 0;
    if (is_commit) {
        if (resumed_many)
            queue_wake_now(InvalidOid);
        else
            for (int i = 0; i < nresumed; i++)
                queue_wake_now(resumed[i]);
    }
    nresumed = 0;
    resumed_many = false;
}

// A prepared transaction would release its counts at PREPARE and send its invalidations only at
// COMMIT PREPARED, leaving claims in between with the old settings.
void on_xact(XactEvent event, void *)
{
    if (event == XACT_EVENT_PRE_PREPARE && (ncounted > 0 || nresumed > 0 || resumed_many))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("cannot PREPARE a transaction that has paused or resumed a queue")));
}

// Waits for every other transaction holding RowShareLock on queue: a claim's lock, taken before
// it read the pause counters (open_claims). Each wait is a lock wait (lock_timeout, deadlock
// detection). Inserts take RowExclusiveLock only, so producers are not waited for. Nor is a
// backend asleep in claim_wait whose transaction has no xid: it has claimed nothing, and its next
// look reads the counters after it woke (it clears its wait event, then passes a barrier; this
// counted before reading the wait event), so it sees this pause.
void wait_for_claims(Oid queue)
{
    uint32 sleeping = queue_wait_event_info();
    LockData *data = GetLockStatusData();
    VirtualTransactionId *holders =
        static_cast<VirtualTransactionId *>(palloc(sizeof(VirtualTransactionId) * (data->nelements + 1)));
    int n = 0;
    for (int i = 0; i < data->nelements; i++) {
        const LockInstanceData &l = data->locks[i];
        if (l.locktag.locktag_type != LOCKTAG_RELATION || l.locktag.locktag_field1 != MyDatabaseId ||
            l.locktag.locktag_field2 != queue || (l.holdMask & LOCKBIT_ON(RowShareLock)) == 0 || l.pid == MyProcPid)
            continue;
        PGPROC *proc = l.pid != 0 ? BackendPidGetProc(l.pid) : nullptr;
        if (proc != nullptr) {
            volatile PGPROC *p = proc;
            if (p->wait_event_info == sleeping && !TransactionIdIsValid(p->xid))
                continue;
        }
#if PG_VERSION_NUM >= 170000
        holders[n++] = l.vxid;
#else
        holders[n].backendId = l.backend;
        holders[n].localTransactionId = l.lxid;
        n++;
#endif
    }
    for (int i = 0; i < n; i++)
        (void) VirtualXactLock(holders[i], true);
    pfree(holders);
}

} // namespace

void queue_pause_init()
{
    RegisterResourceReleaseCallback(on_release, nullptr);
    RegisterXactCallback(on_xact, nullptr);
    shared_memory_request("concurrency_kit pauses in progress", sizeof(Counters), reinterpret_cast<void **>(&counters),
                          init_counters);
}

const QueuePlan *open_claims(Oid queue)
{
    bool pausing = pg_call([&] {
        // LockRelationOid, but knowing whether the lock was held before (and taking the
        // invalidations after the counter, below, instead of right after the lock).
        LOCKTAG tag;
        SET_LOCKTAG_RELATION(tag, MyDatabaseId, queue);
        LOCALLOCK *local = nullptr;
#if PG_VERSION_NUM >= 180000
        LockAcquireResult got = LockAcquireExtended(&tag, RowShareLock, false, false, true, &local, false);
#else
        LockAcquireResult got = LockAcquireExtended(&tag, RowShareLock, false, false, true, &local);
#endif
        held_before = got == LOCKACQUIRE_ALREADY_HELD || got == LOCKACQUIRE_ALREADY_CLEAR;
        // The lock is in the lock table before the counter is read (a pause counts, then reads the
        // lock table): one of the two sees the other.
        pg_memory_barrier();
        bool shared = shared_memory_attach();
        bool counted_here = !shared || pg_atomic_read_u32(&counters->pausing[slot_of(queue)]) != 0;
        pg_read_barrier();
        bool in_progress = false;
        if (counted_here) {
            in_progress = !ConditionalLockDatabaseObject(RelationRelationId, queue, pause_lock_subid, ShareLock);
            if (!in_progress)
                UnlockDatabaseObject(RelationRelationId, queue, pause_lock_subid, ShareLock);
        }
        // A pause no longer counted has sent its invalidations: the settings read next include it.
        AcceptInvalidationMessages();
        if (got != LOCKACQUIRE_ALREADY_CLEAR)
            MarkLockClear(local);
        return in_progress;
    });
    const QueuePlan &claim = queue_statement(QueueStatement::Claim, queue);
    last_gate = pausing ? ClaimGate::Pausing : claim.paused ? ClaimGate::Paused : ClaimGate::Open;
    if (last_gate == ClaimGate::Open)
        return &claim;
    if (!may_claim(queue))
        throw Error(ERRCODE_INSUFFICIENT_PRIVILEGE, fmt("permission denied for table %s", claim.table.c_str()));
    return nullptr;
}

ClaimGate last_claim_gate()
{
    return last_gate;
}

bool claim_lock_held_before()
{
    return held_before;
}

void pause_claims(Oid queue)
{
    // Paused in this transaction already (another key of it): it counts until the end, and the
    // claims in flight were waited for then; a claim since sees the pause in progress.
    for (int i = 0; i < ncounted; i++)
        if (counted_queue[i] == queue)
            return;
    pg_call([&] {
        if (ncounted == max_per_transaction)
            ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                            errmsg("at most %d queues can be paused in one transaction", max_per_transaction)));
        // Serialises the pauses of the queue (lock_timeout bounds the wait); claims try it.
        LockDatabaseObject(RelationRelationId, queue, pause_lock_subid, ExclusiveLock);
        if (shared_memory_attach()) {
            uint32 slot = slot_of(queue);
            pg_atomic_fetch_add_u32(&counters->pausing[slot], 1);
            counted[ncounted] = slot;
            counted_queue[ncounted++] = queue;
        }
        wait_for_claims(queue);
    });
}

void wake_at_resume(Oid queue)
{
    for (int i = 0; i < nresumed; i++)
        if (resumed[i] == queue)
            return;
    if (nresumed == max_per_transaction)
        resumed_many = true;
    else
        resumed[nresumed++] = queue;
}

} // namespace ck
