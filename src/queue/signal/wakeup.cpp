// Wake-up on commit for ck.claim_wait and ck.await_job: shared condition variables, a
// per-transaction list of slots to wake, and the trigger ck.queue_ready that every queue carries.
#include "queue/signal/wakeup.hpp"
#include "base/boundary.hpp"
#include "base/shared_memory.hpp"

extern "C" {
#include "access/xact.h"
#include "port/atomics.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "utils/wait_event.h"
}

namespace ck {

namespace {

// Enough slots that unrelated queues rarely share one; 256 condition variables are ~4 kB.
constexpr uint32 slot_count = 256;

struct Slots {
    ConditionVariable cv[slot_count];
    // ck.await_job (queue_await_*): its own condition variables, addressed by job, woken by
    // commits that finish jobs, and how many callers await a job of each slot (see
    // queue_mark_finished).
    ConditionVariable finished_cv[slot_count];
    pg_atomic_uint32 awaiting[slot_count];
};

Slots *slots = nullptr;
ConditionVariable *prepared = nullptr;   // the slot this backend prepared to sleep on

// Queues this transaction made jobs ready in; past capacity every slot is woken.
constexpr int max_marked = 32;
uint32 marked[max_marked];
int nmarked = 0;
bool wake_all = false;

// Jobs' slots this transaction finished jobs of (for ck.await_job); past capacity every slot
// where someone awaits is woken.
constexpr int max_finished = 64;
uint32 finished[max_finished];
int nfinished = 0;
bool finished_all = false;
int awaiting_slot = -1;   // the slot this backend counts itself in while it awaits a job

#if PG_VERSION_NUM >= 170000
// 17+ names an extension's wait events: pg_stat_activity shows CkClaimWait. Registered on the
// first sleep, since it takes a shared lock and may raise (inside pg_call there), then kept
// for the backend's life (an id is never 0: it carries the class bits).
uint32 claim_wait_event = 0;

uint32 wait_event()
{
    if (claim_wait_event == 0)
        claim_wait_event = WaitEventExtensionNew("CkClaimWait");
    return claim_wait_event;
}
#else
uint32 wait_event()
{
    return PG_WAIT_EXTENSION;
}
#endif

uint32 slot_of(Oid queue)
{
    return hash_combine(murmurhash32(MyDatabaseId), murmurhash32(queue)) % slot_count;
}

// ck.await_job's slot of a job: callers of different jobs of one queue sleep apart.
uint32 slot_of_job(Oid queue, int64 job)
{
    uint64 j = static_cast<uint64>(job);
    uint32 h = hash_combine(murmurhash32(MyDatabaseId), murmurhash32(queue));
    return hash_combine(h, murmurhash32(static_cast<uint32>(j) ^ static_cast<uint32>(j >> 32))) % slot_count;
}

void on_xact(XactEvent event, void *)
{
    if (event == XACT_EVENT_COMMIT && slots != nullptr) {
        // The commit is visible to other snapshots by now (ProcArrayEndTransaction ran).
        if (wake_all)
            for (uint32 i = 0; i < slot_count; i++)
                ConditionVariableBroadcast(&slots->cv[i]);
        else
            for (int i = 0; i < nmarked; i++)
                ConditionVariableBroadcast(&slots->cv[marked[i]]);
        // Read after the commit became visible: an awaiter that counted itself later looks
        // after that, and sees the job finished (queue_await_prepare).
        pg_memory_barrier();
        for (int j = 0; j < (finished_all ? static_cast<int>(slot_count) : nfinished); j++) {
            uint32 i = finished_all ? static_cast<uint32>(j) : finished[j];
            if (pg_atomic_read_u32(&slots->awaiting[i]) > 0)
                ConditionVariableBroadcast(&slots->finished_cv[i]);
        }
    }
    if ((event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT) && awaiting_slot >= 0 && slots != nullptr) {
        pg_atomic_fetch_sub_u32(&slots->awaiting[awaiting_slot], 1);   // an await ended by an error
        awaiting_slot = -1;
    }
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
        event == XACT_EVENT_PREPARE) {
        nmarked = 0;
        wake_all = false;
        nfinished = 0;
        finished_all = false;
        prepared = nullptr;   // an abort has cancelled the sleep itself
    }
}

// Shared memory, made: every condition variable ready for use.
void init_slots(void *memory)
{
    Slots *made = static_cast<Slots *>(memory);
    for (uint32 i = 0; i < slot_count; i++) {
        ConditionVariableInit(&made->cv[i]);
        ConditionVariableInit(&made->finished_cv[i]);
        pg_atomic_init_u32(&made->awaiting[i], 0);
    }
}

} // namespace

void queue_wakeup_init()
{
    RegisterXactCallback(on_xact, nullptr);
    shared_memory_request("concurrency_kit claim_wait slots", sizeof(Slots), reinterpret_cast<void **>(&slots),
                          init_slots);
}

bool queue_wakeup_active()
{
    return shared_memory_attach();
}

void queue_mark_ready(Oid queue)
{
    // Attached even for the first job: a waiter elsewhere may sleep on this queue's slot.
    if (wake_all || !shared_memory_attach())
        return;
    uint32 slot = slot_of(queue);
    for (int i = 0; i < nmarked; i++)
        if (marked[i] == slot)
            return;
    if (nmarked == max_marked)
        wake_all = true;
    else
        marked[nmarked++] = slot;
}

void queue_wake_now(Oid queue)
{
    if (slots == nullptr)
        return;
    if (queue == InvalidOid)
        for (uint32 i = 0; i < slot_count; i++)
            ConditionVariableBroadcast(&slots->cv[i]);
    else
        ConditionVariableBroadcast(&slots->cv[slot_of(queue)]);
}

uint32 queue_wait_event_info()
{
    return wait_event();
}

void queue_wait_prepare(Oid queue)
{
    if (!shared_memory_attach())
        return;
    prepared = &slots->cv[slot_of(queue)];
    ConditionVariablePrepareToSleep(prepared);
}

void queue_wait_sleep(long timeout_ms)
{
    uint32 event = wait_event();
    if (prepared != nullptr) {
        (void) ConditionVariableTimedSleep(prepared, timeout_ms, event);
        return;
    }
    (void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout_ms, event);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
}

void queue_wait_cancel()
{
    if (prepared != nullptr)
        ConditionVariableCancelSleep();
    prepared = nullptr;
}

void queue_mark_finished(Oid queue, int64 job)
{
    // Only recorded: the commit reads the slot's awaiters (none: no broadcast at all).
    if (slots == nullptr || finished_all)
        return;
    uint32 slot = slot_of_job(queue, job);
    for (int i = 0; i < nfinished; i++)
        if (finished[i] == slot)
            return;
    if (nfinished == max_finished)
        finished_all = true;
    else
        finished[nfinished++] = slot;
}

void queue_mark_finished(Oid)
{
    if (slots != nullptr)
        finished_all = true;
}

bool queue_await_prepare(Oid queue, int64 job)
{
    if (!shared_memory_attach())
        return false;
    uint32 slot = slot_of_job(queue, job);
    if (awaiting_slot != static_cast<int>(slot)) {
        queue_await_end();
        pg_atomic_fetch_add_u32(&slots->awaiting[slot], 1);   // a full barrier: counted before the look
        awaiting_slot = static_cast<int>(slot);
    }
    prepared = &slots->finished_cv[slot];
    ConditionVariablePrepareToSleep(prepared);
    return true;
}

void queue_await_end()
{
    queue_wait_cancel();
    if (awaiting_slot >= 0 && slots != nullptr)
        pg_atomic_fetch_sub_u32(&slots->awaiting[awaiting_slot], 1);
    awaiting_slot = -1;
}

} // namespace ck
