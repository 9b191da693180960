// Activity counters: an open-addressed table in the shared state (shared_memory.hpp), one entry per
// (database, queue), claimed with a compare-and-swap of its key and never given back until the server restarts
// (a dropped queue's entry stays, hidden; concurrency_kit.activity_queues bounds them). The
// counters are atomics: a commit adds its counts without a lock. A transaction's counts wait
// in the backend, by subtransaction level, until it commits; an aborted (sub)transaction's
// are dropped. A prepared transaction's are counted at PREPARE (most are committed).
#include "queue/signal/activity.hpp"
#include "base/boundary.hpp"
#include "base/shared_memory.hpp"
#include "queue/signal/wakeup.hpp"

extern "C" {
#include "common/hashfn.h"
#include "port/atomics.h"
#include "utils/guc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}

namespace ck {

namespace {

constexpr int kinds = static_cast<int>(Activity::Kinds);

struct Entry {
    pg_atomic_uint64 key;     // database << 32 | queue; 0: free
    pg_atomic_uint64 since;   // when the entry was taken (a TimestampTz)
    pg_atomic_uint64 count[kinds];
};

struct Shared {
    pg_atomic_uint64 uncounted;   // events of queues that found no free entry
    int size;
    Entry entry[FLEXIBLE_ARRAY_MEMBER];
};

int max_queues = 1024;
Shared *shared = nullptr;

size_t shared_size()
{
    return offsetof(Shared, entry) + sizeof(Entry) * static_cast<size_t>(max_queues);
}

void init_shared(void *memory)
{
    Shared *made = static_cast<Shared *>(memory);
    pg_atomic_init_u64(&made->uncounted, 0);
    made->size = max_queues;
    for (int i = 0; i < max_queues; i++) {
        Entry &e = made->entry[i];
        pg_atomic_init_u64(&e.key, 0);
        pg_atomic_init_u64(&e.since, 0);
        for (pg_atomic_uint64 &c : e.count)
            pg_atomic_init_u64(&c, 0);
    }
}

uint64 key_of(Oid db, Oid queue)
{
    return (static_cast<uint64>(db) << 32) | queue;
}

// The queue's entry, taken if it has none yet; nullptr when the table is full.
Entry *entry_of(Oid queue)
{
    uint64 key = key_of(MyDatabaseId, queue);
    uint32 start = hash_combine(murmurhash32(MyDatabaseId), murmurhash32(queue));
    for (int probe = 0; probe < shared->size; probe++) {
        Entry *e = &shared->entry[(start + probe) % shared->size];
        uint64 seen = pg_atomic_read_u64(&e->key);
        if (seen == 0) {
            uint64 expected = 0;
            if (pg_atomic_compare_exchange_u64(&e->key, &expected, key)) {
                pg_atomic_write_u64(&e->since, static_cast<uint64>(GetCurrentTimestamp()));
                return e;
            }
            seen = expected;   // another backend took it first
        }
        if (seen == key)
            return e;
    }
    return nullptr;
}

void add(Oid queue, const uint64 *counts)
{
    Entry *e = entry_of(queue);
    for (int k = 0; k < kinds; k++)
        if (counts[k] != 0) {
            if (e != nullptr)
                pg_atomic_fetch_add_u64(&e->count[k], counts[k]);
            else
                pg_atomic_fetch_add_u64(&shared->uncounted, counts[k]);
        }
}

// This transaction's counts, per queue and subtransaction level. Past the last slot a count
// is added at once: better counted early than lost.
struct Pending {
    Oid queue;
    int level;
    uint64 count[kinds];
};
constexpr int max_pending = 32;
Pending pending[max_pending];
int npending = 0;

void flush_pending()
{
    for (int i = 0; i < npending; i++)
        add(pending[i].queue, pending[i].count);
    npending = 0;
}

void on_xact(XactEvent event, void *)
{
    if (npending == 0)
        return;
    switch (event) {
    case XACT_EVENT_COMMIT:
    case XACT_EVENT_PREPARE:
        flush_pending();
        break;
    case XACT_EVENT_ABORT:
    case XACT_EVENT_PARALLEL_ABORT:
        npending = 0;
        break;
    default:
        break;
    }
}

void on_subxact(SubXactEvent event, SubTransactionId, SubTransactionId, void *)
{
    if (npending == 0)
        return;
    int level = GetCurrentTransactionNestLevel();
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        int kept = 0;
        for (int i = 0; i < npending; i++)
            if (pending[i].level < level)
                pending[kept++] = pending[i];
        npending = kept;
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (int i = 0; i < npending; i++)
            if (pending[i].level >= level)
                pending[i].level = level - 1;
    }
}

} // namespace

void queue_activity_init()
{
    // A setting fixed at server start can only be defined while the library is preloaded (a
    // backend that loads it later would be refused, FATAL); without the preload the table
    // keeps its default size.
    if (process_shared_preload_libraries_in_progress)
        DefineCustomIntVariable("concurrency_kit.activity_queues",
                                "How many queues ck.queue_activity counts for, over all databases.",
                                "Each queue that has been used since the server started takes one entry until the "
                                "next restart; past that, events are not counted. Only with the library in "
                                "shared_preload_libraries; without, 1024.",
                                &max_queues, 1024, 16, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    RegisterXactCallback(on_xact, nullptr);
    RegisterSubXactCallback(on_subxact, nullptr);
    shared_memory_request("concurrency_kit queue activity", shared_size(), reinterpret_cast<void **>(&shared),
                          init_shared);
}

void count_at_commit(Oid queue, Activity what, uint64 n, const Datum *jobs)
{
    if (shared == nullptr || n == 0)
        return;
    // ck.await_job's wake-up (every path that finishes a job counts it here).
    if (what == Activity::Completed || what == Activity::Buried || what == Activity::Cancelled) {
        if (jobs == nullptr)
            queue_mark_finished(queue);
        else
            for (uint64 i = 0; i < n; i++)
                queue_mark_finished(queue, DatumGetInt64(jobs[i]));
    }
    int level = GetCurrentTransactionNestLevel();
    int k = static_cast<int>(what);
    for (int i = 0; i < npending; i++)
        if (pending[i].queue == queue && pending[i].level == level) {
            pending[i].count[k] += n;
            return;
        }
    if (npending == max_pending) {
        count_now(queue, what, n);
        return;
    }
    Pending &p = pending[npending++];
    p = Pending{queue, level, {}};
    p.count[k] = n;
}

void count_now(Oid queue, Activity what, uint64 n)
{
    if (shared == nullptr || n == 0)
        return;
    uint64 counts[kinds] = {};
    counts[static_cast<int>(what)] = n;
    add(queue, counts);
}

bool activity_totals(ActivityTotals *totals)
{
    if (!shared_memory_attach())
        return false;
    totals->uncounted = pg_atomic_read_u64(&shared->uncounted);
    totals->size = shared->size;
    return true;
}

int activity_rows(ActivityRow **rows)
{
    *rows = static_cast<ActivityRow *>(palloc(sizeof(ActivityRow) * (shared->size + 1)));
    int n = 0;
    for (int i = 0; i < shared->size; i++) {
        Entry &e = shared->entry[i];
        uint64 key = pg_atomic_read_u64(&e.key);
        ActivityRow &row = (*rows)[n];
        row.queue = static_cast<Oid>(key & 0xFFFFFFFF);
        if (key == 0 || static_cast<Oid>(key >> 32) != MyDatabaseId ||
            !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(row.queue)))
            continue;
        for (int k = 0; k < kinds; k++)
            row.count[k] = pg_atomic_read_u64(&e.count[k]);
        uint64 since = pg_atomic_read_u64(&e.since);
        row.since = since != 0 ? static_cast<TimestampTz>(since) : GetCurrentTimestamp();
        n++;
    }
    return n;
}

} // namespace ck
