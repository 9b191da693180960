// The claim frontier. Why it is safe:
//
// A claim under READ COMMITTED reads with a fresh snapshot. An index entry it passes is dead
// (its row was claimed, completed or moved by a committed transaction: never claimable again
// by a later fresh snapshot), or it is a row some transaction in progress holds or is
// inserting, or a job on its last attempt. So after a claim of priority p read from start to
// its moment (or to its last claimed place), everything below that point is unclaimable for
// every later claim, except rows that an unfinished transaction will make ready when it ends:
// its inserts and retries when it commits, the rows it locked when it aborts. Those
// transactions record where (frontier_on_commit, frontier_on_abort) and, once their end is
// visible to new snapshots (the transaction callbacks run after ProcArrayEndTransaction),
// lower the frontier to that place: a "lowering". A claim reads the lowering count (the epoch)
// before its snapshot; when it advances, it stops below every lowering counted since, which
// its snapshot may not have seen (a small ring keeps the recent ones; past it, no advance).
// A lowering whose place is still in the future when it happens is skipped (any claim that
// could pass that place starts after it and sees the row), unless it brings a new priority.
//
// Plain SQL that updates or deletes jobs (a statement trigger sees it) makes the frontier start
// over when its transaction ends. What no one records (rows locked by plain SELECT ... FOR
// UPDATE and released, prepared transactions, triggers disabled by session_replication_role,
// a clock stepped back) is found by the periodic full claim
// (concurrency_kit.full_claim_interval, 10 s): one claim per interval reads the whole index
// and, if it takes a job the frontier had passed, lowers the frontier to it; when its batch
// fills before the last known priority, each priority it did not reach is lowered to its first
// claimable job (engine/claim.cpp, lower_to_heads). So a miss waits one interval in any priority.
//
// The shared state appears at the server's start when the library is preloaded, else at the first use
// of a queue after the start (shared_memory.hpp); a crash restart makes it anew. Either way a queue
// without a slot starts from the beginning of its index, so a frontier only ever holds what claims
// learnt while it existed. Every backend that records attaches first (record), so no transaction
// that makes jobs ready goes unrecorded once any claim reads a frontier.
#include "queue/signal/frontier.hpp"
#include "base/boundary.hpp"
#include "queue/store/place.hpp"
#include "base/shared_memory.hpp"
#include "base/spi.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
}

namespace ck {

namespace {

int full_claim_interval_ms = 10000;

// Lowerings kept for the claims under way: a claim that outlasts this many cannot advance.
// Lowerings between two claims' views share an entry (when of one priority), so this counts
// claims more than lowerings: a few seconds of claims at thousands a second.
constexpr int ring_size = 4096;
constexpr int slot_count = 32;

struct Lowering {
    uint64 epoch;
    bool reset;
    int32 priority;
    Place place;
};

struct Slot {
    slock_t mutex;
    Oid db;
    Oid queue;                   // InvalidOid: free
    uint64 generation;           // a new one each time the slot is given to a queue
    uint64 epoch;
    uint64 viewed;               // the epoch the latest view read
    TimestampTz last_used;
    TimestampTz last_check;      // the last periodic full claim
    TimestampTz overflow_at;     // when more priorities than fit were seen (0: never)
    bool known;                  // the priorities are known
    uint64 resets;               // how often the frontier was forgotten
    // While the priorities are not known: those the lowerings brought meanwhile, for the
    // discovery under way (its snapshot may predate them); one more than fit says too many.
    int npending;
    int32 pending[frontier_max_priorities + 1];
    int npriorities;
    int32 priority[frontier_max_priorities];
    Place start[frontier_max_priorities];
    TimestampTz bury_from;
    Lowering ring[ring_size];
};

struct Shared {
    slock_t mutex;               // taken before a slot's when a slot is looked up or given
    uint64 generations;
    Slot slot[slot_count];
};

Shared *shared = nullptr;

constexpr Place key_min{DT_NOBEGIN, PG_INT64_MIN};

// Which slot this backend last found each queue in (checked under the slot's lock).
constexpr int cache_size = 16;
struct Cached {
    Oid queue;
    int slot;
};
Cached cache[cache_size];
int cache_next = 0;

// The queue's slot, locked, or nullptr. With create, a free or the least recently used
// slot is given to the queue (forgetting another queue's frontier is safe: it starts over).
Slot *lock_slot(Oid queue, bool create, TimestampTz now)
{
    for (const Cached &c : cache)
        if (c.queue == queue && OidIsValid(queue)) {
            Slot *s = &shared->slot[c.slot];
            SpinLockAcquire(&s->mutex);
            if (s->db == MyDatabaseId && s->queue == queue)
                return s;
            SpinLockRelease(&s->mutex);
            break;
        }
    SpinLockAcquire(&shared->mutex);
    int found = -1, victim = -1;
    for (int i = 0; i < slot_count && found < 0; i++) {
        const Slot &s = shared->slot[i];
        if (s.queue == queue && s.db == MyDatabaseId)
            found = i;
        else if (victim < 0 || s.queue == InvalidOid ||
                 (shared->slot[victim].queue != InvalidOid && s.last_used < shared->slot[victim].last_used))
            victim = i;
    }
    if (found < 0 && !create) {
        SpinLockRelease(&shared->mutex);
        return nullptr;
    }
    int i = found >= 0 ? found : victim;
    Slot *s = &shared->slot[i];
    SpinLockAcquire(&s->mutex);
    if (found < 0) {
        s->db = MyDatabaseId;
        s->queue = queue;
        s->generation = ++shared->generations;
        s->epoch = 0;
        s->viewed = 0;
        s->last_used = now;
        s->last_check = now;
        s->overflow_at = 0;
        s->known = false;
        s->resets = 0;
        s->npending = 0;
        s->npriorities = 0;
        s->bury_from = DT_NOBEGIN;
    }
    SpinLockRelease(&shared->mutex);
    cache[cache_next] = {queue, i};
    cache_next = (cache_next + 1) % cache_size;
    return s;
}

int find_priority(const Slot *s, int32 priority)
{
    for (int i = 0; i < s->npriorities; i++)
        if (s->priority[i] == priority)
            return i;
    return -1;
}

// Adds a priority in order, starting at start; false when there is no room.
bool add_priority(Slot *s, int32 priority, Place start)
{
    if (s->npriorities == frontier_max_priorities)
        return false;
    int i = s->npriorities++;
    for (; i > 0 && s->priority[i - 1] > priority; i--) {
        s->priority[i] = s->priority[i - 1];
        s->start[i] = s->start[i - 1];
    }
    s->priority[i] = priority;
    s->start[i] = start;
    return true;
}

// Lowers the locked slot's frontier to place (or forgets it) and counts the lowering.
void push(Slot *s, bool reset, int32 priority, Place place, TimestampTz now)
{
    // No view has read the latest entry's epoch yet: every claim that will check it checks
    // this one too, so one of the same priority can take the lower place of both.
    Lowering &latest = s->ring[s->epoch % ring_size];
    if (s->epoch > 0 && s->viewed < s->epoch && !reset && !latest.reset && latest.priority == priority) {
        if (place_less(place, latest.place))
            latest.place = place;
    } else {
        s->epoch++;
        s->ring[s->epoch % ring_size] = {s->epoch, reset, priority, place};
    }
    if (reset) {
        s->known = false;
        s->resets++;
        s->npending = 0;
        s->overflow_at = 0;
        s->bury_from = DT_NOBEGIN;
        return;
    }
    if (place.run_at < s->bury_from)
        s->bury_from = place.run_at;
    if (!s->known) {
        bool seen = false;
        for (int i = 0; i < s->npending && !seen; i++)
            seen = s->pending[i] == priority;
        if (!seen && s->npending <= frontier_max_priorities)
            s->pending[s->npending++] = priority;
        return;
    }
    int i = find_priority(s, priority);
    if (i >= 0) {
        if (place_less(place, s->start[i]))
            s->start[i] = place;
    } else if (!add_priority(s, priority, place)) {
        s->known = false;
        s->overflow_at = now;
    }
}

void lower(Oid queue, bool reset, int32 priority, Place place, TimestampTz now)
{
    if (Slot *s = lock_slot(queue, false, 0)) {
        push(s, reset, priority, place, now);
        SpinLockRelease(&s->mutex);
    }
}

// A job that becomes ready only later (its place lies in the future) needs no lowering, but
// claims must know its priority: a priority the frontier does not know yet is added (and
// counted, for a discovery under way), starting at the job.
void learn_priority(Oid queue, int32 priority, Place place, TimestampTz now)
{
    if (Slot *s = lock_slot(queue, false, 0)) {
        if (!s->known || find_priority(s, priority) < 0)
            push(s, false, priority, place, now);
        SpinLockRelease(&s->mutex);
    }
}

// This transaction's events, applied when it (or a subtransaction) ends.
// Lease: a claim's lease end, at commit; its priority is known, so it only matters if the
// lease has already run out by then. End: at commit or abort, whichever comes.
enum class EventKind : uint8_t { Abort, Commit, End, Lease, Reset };
struct Event {
    Oid queue;
    EventKind kind;
    int level;
    int32 priority;
    Place place;
};
// Room for a claim that takes jobs of every priority the frontier keeps: two events each (the
// abort and the lease end), and as many for the inserts and retries of the same transaction.
constexpr int max_events = 4 * frontier_max_priorities;
Event events[max_events];
int nevents = 0;
bool events_overflow = false;   // some were lost: every frontier of this database is forgotten

void record(EventKind kind, Oid queue, int32 priority, Place place)
{
    // Every writer records, also one whose backend has not attached yet: a claim elsewhere may
    // already read from the frontier.
    if (!shared_memory_attach())
        return;
    int level = GetCurrentTransactionNestLevel();
    for (int i = 0; i < nevents; i++) {
        Event &e = events[i];
        if (e.queue == queue && e.kind == kind && e.level == level && (kind == EventKind::Reset || e.priority == priority)) {
            if (place_less(place, e.place))
                e.place = place;
            return;
        }
    }
    if (nevents == max_events) {
        events_overflow = true;
        return;
    }
    events[nevents++] = {queue, kind, level, priority, place};
}

void reset_database(TimestampTz now)
{
    for (Slot &s : shared->slot) {
        SpinLockAcquire(&s.mutex);
        if (s.db == MyDatabaseId && s.queue != InvalidOid)
            push(&s, true, 0, key_min, now);
        SpinLockRelease(&s.mutex);
    }
}

// Applies the events of `kind` at `level` or deeper (all at top level) and drops the rest of
// those levels. A lowering whose place is still in the future is not needed (see the top).
void finish(EventKind applied, int level)
{
    TimestampTz now = GetCurrentTimestamp();
    int kept = 0;
    for (int i = 0; i < nevents; i++) {
        const Event &e = events[i];
        if (e.level < level) {
            events[kept++] = e;
            continue;
        }
        bool reset = e.kind == EventKind::Reset;
        bool applies = e.kind == applied || e.kind == EventKind::End ||
                       (e.kind == EventKind::Lease && applied == EventKind::Commit);
        bool committed = applied == EventKind::Commit && (e.kind == EventKind::Commit || e.kind == EventKind::End);
        if (reset || (applies && e.place.run_at <= now))
            lower(e.queue, reset, e.priority, e.place, now);
        else if (committed)
            learn_priority(e.queue, e.priority, e.place, now);   // a job for later, maybe of a new priority
    }
    nevents = kept;
    if (level <= 1) {
        if (events_overflow)
            reset_database(now);
        events_overflow = false;
    }
}

void on_xact(XactEvent event, void *)
{
    if (shared == nullptr || (nevents == 0 && !events_overflow))
        return;
    switch (event) {
    case XACT_EVENT_COMMIT:
        finish(EventKind::Commit, 1);
        break;
    case XACT_EVENT_ABORT:
    case XACT_EVENT_PARALLEL_ABORT:
        finish(EventKind::Abort, 1);
        break;
    case XACT_EVENT_PREPARE:
        // The outcome comes later, maybe in another backend: the periodic full claim covers it.
        nevents = 0;
        events_overflow = false;
        break;
    default:
        break;
    }
}

void on_subxact(SubXactEvent event, SubTransactionId, SubTransactionId, void *)
{
    if (shared == nullptr || nevents == 0)
        return;
    int level = GetCurrentTransactionNestLevel();
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        finish(EventKind::Abort, level);
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (int i = 0; i < nevents; i++)
            if (events[i].level >= level)
                events[i].level = level - 1;
    }
}

// Shared memory, made: every frontier unknown, every lock free.
void init_shared(void *memory)
{
    Shared *made = static_cast<Shared *>(memory);
    memset(made, 0, sizeof(Shared));
    SpinLockInit(&made->mutex);
    for (Slot &s : made->slot)
        SpinLockInit(&s.mutex);
}

void copy_frontier(const Slot *s, FrontierView *v)
{
    v->npriorities = s->npriorities;
    for (int i = 0; i < s->npriorities; i++) {
        v->priority[i] = s->priority[i];
        v->start[i] = s->start[i];
    }
}

} // namespace

void queue_frontier_init()
{
    DefineCustomIntVariable("concurrency_kit.full_claim_interval",
                            "How often a claim reads a queue's whole claim index instead of starting at its frontier.",
                            "It finds jobs made ready behind the extension's back (plain UPDATEs of run_at or priority, "
                            "rows locked by other statements). 0 turns the frontier off: every claim reads the whole index.",
                            &full_claim_interval_ms, 10000, 0, 3600 * 1000, PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr,
                            nullptr);
    MarkGUCPrefixReserved("concurrency_kit");
    RegisterXactCallback(on_xact, nullptr);
    RegisterSubXactCallback(on_subxact, nullptr);
    shared_memory_request("concurrency_kit claim frontier", sizeof(Shared), reinterpret_cast<void **>(&shared),
                          init_shared);
}

FrontierView frontier_view(Oid queue, TimestampTz now)
{
    FrontierView v;
    if (full_claim_interval_ms == 0 || !shared_memory_attach())
        return v;
    Slot *s = lock_slot(queue, true, now);
    s->last_used = now;
    v.epoch = s->epoch;
    s->viewed = s->epoch;
    v.resets = s->resets;
    v.bury_from = s->bury_from;
    TimestampTz interval = static_cast<TimestampTz>(full_claim_interval_ms) * 1000;
    if (!s->known) {
        v.mode = s->overflow_at != 0 && now - s->overflow_at < interval ? ClaimMode::Full : ClaimMode::Discover;
    } else {
        v.mode = ClaimMode::Frontier;
        if (now - s->last_check >= interval) {
            s->last_check = now;
            v.mode = ClaimMode::Check;
        }
        copy_frontier(s, &v);
    }
    v.generation = s->generation;
    SpinLockRelease(&s->mutex);
    return v;
}

namespace {

// The locked slot of the view's queue, as long as it is still the slot the view was read
// from and every lowering since is in the ring; *from is the first of those.
Slot *lock_for_advance(Oid queue, const FrontierView &v)
{
    Slot *s = lock_slot(queue, false, 0);
    if (s == nullptr)
        return nullptr;
    if (s->generation != v.generation || s->epoch - v.epoch > static_cast<uint64>(ring_size)) {
        SpinLockRelease(&s->mutex);
        return nullptr;
    }
    return s;
}

} // namespace

void frontier_advance(Oid queue, const FrontierView &v, int32 priority, Place to)
{
    if (shared == nullptr)
        return;
    Slot *s = lock_for_advance(queue, v);
    if (s == nullptr)
        return;
    bool ok = s->known;
    for (uint64 e = v.epoch + 1; ok && e <= s->epoch; e++) {
        const Lowering &l = s->ring[e % ring_size];
        if (l.reset)
            ok = false;
        else if (l.priority == priority && place_less(l.place, to))
            to = l.place;
    }
    int i = ok ? find_priority(s, priority) : -1;
    if (i >= 0 && place_less(s->start[i], to))
        s->start[i] = to;
    SpinLockRelease(&s->mutex);
}

void frontier_bury_advance(Oid queue, const FrontierView &v, TimestampTz to)
{
    if (shared == nullptr)
        return;
    Slot *s = lock_for_advance(queue, v);
    if (s == nullptr)
        return;
    bool ok = true;
    for (uint64 e = v.epoch + 1; ok && e <= s->epoch; e++) {
        const Lowering &l = s->ring[e % ring_size];
        if (l.reset)
            ok = false;
        else if (l.place.run_at < to)
            to = l.place.run_at;
    }
    if (ok && s->bury_from < to)
        s->bury_from = to;
    SpinLockRelease(&s->mutex);
}

bool frontier_discovered(Oid queue, FrontierView *v, int n, const int32 *priorities, TimestampTz now)
{
    if (shared == nullptr)
        return false;
    Slot *s = lock_slot(queue, false, 0);
    if (s == nullptr)
        return false;
    // A reset since the view: what the snapshot saw may be out of date (say, priorities moved).
    bool ok = s->generation == v->generation && s->resets == v->resets;
    if (ok && !s->known) {
        // Priorities of rows this discovery's snapshot could not see are those pending.
        bool fits = n <= frontier_max_priorities && s->npending <= frontier_max_priorities;
        s->npriorities = 0;
        for (int i = 0; fits && i < n; i++)
            fits = add_priority(s, priorities[i], key_min);
        for (int i = 0; fits && i < s->npending; i++)
            if (find_priority(s, s->pending[i]) < 0)
                fits = add_priority(s, s->pending[i], key_min);
        if (!fits) {
            s->overflow_at = now;
            s->npriorities = 0;
        }
        s->known = ok = fits;
        s->npending = 0;
    }
    if (ok)
        copy_frontier(s, v);
    SpinLockRelease(&s->mutex);
    return ok;
}

void frontier_check_claimed(Oid queue, int32 priority, Place place)
{
    if (shared == nullptr)
        return;
    Slot *s = lock_slot(queue, false, 0);
    if (s == nullptr)
        return;
    int i = find_priority(s, priority);
    if (s->known && (i < 0 || place_less(place, s->start[i])))
        push(s, false, priority, place, GetCurrentTimestamp());
    SpinLockRelease(&s->mutex);
}

void frontier_on_insert(TriggerData *trigger)
{
    if (!shared_memory_attach())
        return;
    Relation rel = trigger->tg_relation;
    Oid queue = RelationGetRelid(rel);
    TupleDesc desc = RelationGetDescr(rel);
    AttrNumber priority = job_column(desc, "priority", INT4OID);
    AttrNumber run_at = job_column(desc, "run_at", TIMESTAMPTZOID);
    AttrNumber id = job_column(desc, "id", INT8OID);
    Tuplestorestate *rows = trigger->tg_newtable;
    if (rows == nullptr || priority == InvalidAttrNumber || run_at == InvalidAttrNumber || id == InvalidAttrNumber) {
        frontier_reset_at_end(queue);
        return;
    }
    TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
    int reader = tuplestore_alloc_read_pointer(rows, EXEC_FLAG_REWIND);
    tuplestore_select_read_pointer(rows, reader);
    tuplestore_rescan(rows);
    while (tuplestore_gettupleslot(rows, true, false, slot)) {
        bool null_p, null_r, null_i;
        Datum p = slot_getattr(slot, priority, &null_p);
        Datum r = slot_getattr(slot, run_at, &null_r);
        Datum i = slot_getattr(slot, id, &null_i);
        if (null_p || null_r || null_i)
            frontier_reset_at_end(queue);
        else
            frontier_on_commit(queue, DatumGetInt32(p), Place{DatumGetTimestampTz(r), DatumGetInt64(i)});
    }
    tuplestore_select_read_pointer(rows, 0);
    ExecDropSingleTupleTableSlot(slot);
}

bool frontier_read(Oid queue, FrontierView *v)
{
    if (!shared_memory_attach())
        return false;
    Slot *s = lock_slot(queue, false, 0);
    if (s == nullptr)
        return false;
    bool known = s->known;
    if (known)
        copy_frontier(s, v);
    v->bury_from = s->bury_from;
    v->epoch = s->epoch;
    SpinLockRelease(&s->mutex);
    return known;
}

ClaimPath frontier_path(Oid queue)
{
    if (!shared_memory_attach())
        return {"full", "the server's shared memory had no room for concurrency_kit's shared state: preload the library"};
    if (full_claim_interval_ms == 0)
        return {"full", "concurrency_kit.full_claim_interval is 0: the frontier is off"};
    if (IsolationUsesXactSnapshot())
        return {"full", "this transaction is REPEATABLE READ or SERIALIZABLE: its claims read the whole index"};
    Slot *s = lock_slot(queue, false, 0);
    if (s == nullptr)
        return {"discover", "no claim of the queue since the shared state appeared: the next claim finds its priorities"};
    TimestampTz interval = static_cast<TimestampTz>(full_claim_interval_ms) * 1000;
    bool overflow = s->overflow_at != 0 && GetCurrentTimestamp() - s->overflow_at < interval;
    bool known = s->known;
    SpinLockRelease(&s->mutex);
    if (known)
        return {"frontier", "claims start at each priority's frontier; one per full_claim_interval reads the whole index"};
    if (overflow)
        return {"full", "more than 64 distinct priorities: claims read the whole index, dead entries included"};
    return {"discover", "the frontier was reset: the next claim finds the queue's priorities"};
}

void frontier_on_abort(Oid queue, int32 priority, Place place)
{
    record(EventKind::Abort, queue, priority, place);
}

void frontier_on_commit(Oid queue, int32 priority, Place place)
{
    record(EventKind::Commit, queue, priority, place);
}

void frontier_at_end(Oid queue, int32 priority, Place place)
{
    record(EventKind::End, queue, priority, place);
}

void frontier_on_commit_lease(Oid queue, int32 priority, Place place)
{
    record(EventKind::Lease, queue, priority, place);
}

void frontier_reset_at_end(Oid queue)
{
    record(EventKind::Reset, queue, 0, key_min);
}

void ready_again_on_abort(Oid queue, Datum id, int col)
{
    pg_call([&] {
        JobPlace was = job_place(0, col, 0, id);
        frontier_on_abort(queue, was.priority, was.place);
    });
}

} // namespace ck
