// The shared state's two homes. Preloaded: the shmem_request and shmem_startup hooks, one
// struct per part. Otherwise: one dynamic shared memory segment holding every part, made by
// the first backend that needs it and pinned, so it lives until the server stops or restarts
// after a crash (both make every backend start anew, and a crash restart destroys the pinned
// segments of the old server).
//
// Finding the segment. 17+: the DSM registry (GetNamedDSMSegment), which exists for this. 15
// and 16 have no registry, so the handle is kept in a small struct of the main shared memory,
// taken with ShmemInitStruct after the start: the main segment keeps some spare bytes for
// such late requests (contrib's autoprewarm takes its state so when it is not preloaded). The
// struct goes with the main segment, so a crash restart forgets the handle together with the
// segment. Were the spare bytes used up (a lock table that grew into them), the state cannot
// exist until a restart: every backend runs without it, as 0.3 did without a preload.
//
// The segment's name holds the library's version and the layout's size: a library installed
// anew while the server runs makes a segment of its own instead of misreading the old one.
#include "base/shared_memory.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#if PG_VERSION_NUM >= 170000
#include "storage/dsm_registry.h"
#endif
}

namespace ck {

namespace {

struct Part {
    const char *name;
    size_t size;
    void **where;
    void (*init)(void *);
};

constexpr int max_parts = 5;
Part parts[max_parts];
int nparts = 0;

enum class Mode { None, Preloaded, Dynamic, Unavailable };
Mode mode = Mode::None;

shmem_startup_hook_type prev_startup_hook = nullptr;
#if PG_VERSION_NUM >= 150000
shmem_request_hook_type prev_request_hook = nullptr;
#endif

void request_all()
{
#if PG_VERSION_NUM >= 150000
    if (prev_request_hook)
        prev_request_hook();
#endif
    for (int i = 0; i < nparts; i++)
        RequestAddinShmemSpace(parts[i].size);
}

void startup_all()
{
    if (prev_startup_hook)
        prev_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    for (int i = 0; i < nparts; i++) {
        const Part &p = parts[i];
        bool found;
        *p.where = ShmemInitStruct(p.name, p.size, &found);
        if (!found)
            p.init(*p.where);
    }
    LWLockRelease(AddinShmemInitLock);
    mode = Mode::Preloaded;   // in the postmaster: every backend it starts inherits it
}

// The dynamic segment: the parts one after the other, each aligned.
size_t segment_size()
{
    size_t size = 0;
    for (int i = 0; i < nparts; i++)
        size += MAXALIGN(parts[i].size);
    return size;
}

void init_segment(void *base)
{
    char *at = static_cast<char *>(base);
    for (int i = 0; i < nparts; i++) {
        parts[i].init(at);
        at += MAXALIGN(parts[i].size);
    }
}

void point_at(void *base)
{
    char *at = static_cast<char *>(base);
    for (int i = 0; i < nparts; i++) {
        *parts[i].where = at;
        at += MAXALIGN(parts[i].size);
    }
    mode = Mode::Dynamic;
}

// Short enough for the registry's names (63 bytes) and ShmemIndex's keys (47).
const char *segment_name()
{
    static char name[48];
    snprintf(name, sizeof name, "concurrency_kit %s %zu", CK_VERSION, segment_size());
    return name;
}

#if PG_VERSION_NUM >= 170000

#if PG_VERSION_NUM >= 190000
// 19's registry passes the caller's argument to the callback.
void init_registered(void *base, void *)
{
    init_segment(base);
}
#endif

bool attach_dynamic()
{
    bool found;
#if PG_VERSION_NUM >= 190000
    void *base = GetNamedDSMSegment(segment_name(), segment_size(), init_registered, &found, nullptr);
#else
    void *base = GetNamedDSMSegment(segment_name(), segment_size(), init_segment, &found);
#endif
    point_at(base);
    return true;
}

#else

struct Stash {
    dsm_handle handle;   // DSM_HANDLE_INVALID until the segment is made
};

// The stash, or nullptr when the main segment has no room left for it (the one error taken
// here: ShmemInitStruct raises it having released its own lock and changed nothing).
Stash *find_stash(bool *found)
{
    MemoryContext cxt = CurrentMemoryContext;
    Stash *volatile stash = nullptr;
    PG_TRY();
    {
        stash = static_cast<Stash *>(ShmemInitStruct(segment_name(), sizeof(Stash), found));
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(cxt);
        ErrorData *e = CopyErrorData();
        if (e->sqlerrcode != ERRCODE_OUT_OF_MEMORY)
            PG_RE_THROW();
        FlushErrorState();
        FreeErrorData(e);
    }
    PG_END_TRY();
    return stash;
}

bool attach_dynamic()
{
    // One backend makes the segment while the others wait; held for a mapping only after that.
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found = false;
    Stash *stash = find_stash(&found);
    if (stash == nullptr) {
        LWLockRelease(AddinShmemInitLock);
        return false;
    }
    if (!found)
        stash->handle = DSM_HANDLE_INVALID;
    dsm_segment *seg;
    if (stash->handle == DSM_HANDLE_INVALID) {
        seg = dsm_create(segment_size(), 0);
        init_segment(dsm_segment_address(seg));
        dsm_pin_mapping(seg);
        dsm_pin_segment(seg);   // last: nothing after it can fail and leave it orphaned
        stash->handle = dsm_segment_handle(seg);
    } else {
        seg = dsm_attach(stash->handle);
        if (seg == nullptr)   // pinned, and the stash goes with it: only a bug gets here
            elog(ERROR, "concurrency_kit: the shared state's segment %u is gone", stash->handle);
        dsm_pin_mapping(seg);
    }
    LWLockRelease(AddinShmemInitLock);
    point_at(dsm_segment_address(seg));
    return true;
}

#endif

} // namespace

void shared_memory_request(const char *name, size_t size, void **where, void (*init)(void *))
{
    if (nparts == max_parts)
        elog(ERROR, "concurrency_kit: too many shared memory parts");
    parts[nparts++] = {name, size, where, init};
    if (!process_shared_preload_libraries_in_progress || nparts > 1)
        return;   // attached on first use, or the hooks are in place
#if PG_VERSION_NUM >= 150000
    prev_request_hook = shmem_request_hook;
    shmem_request_hook = request_all;
#endif
    prev_startup_hook = shmem_startup_hook;
    shmem_startup_hook = startup_all;
}

bool shared_memory_tried()
{
    return mode != Mode::None;
}

bool shared_memory_attach()
{
    if (mode != Mode::None)
        return mode != Mode::Unavailable;
    if (attach_dynamic())
        return true;
    mode = Mode::Unavailable;
    ereport(WARNING,
            (errmsg("concurrency_kit runs without its shared state: the server's shared memory has no room left for it"),
             errdetail("Claims read the whole claim index, claim_wait polls and ck.queue_activity is off until the "
                       "server restarts."),
             errhint("Add concurrency_kit to shared_preload_libraries and restart the server.")));
    return false;
}

const char *shared_memory_mode()
{
    switch (mode) {
    case Mode::Preloaded:
        return "preloaded";
    case Mode::Dynamic:
        return "dynamic";
    case Mode::Unavailable:
        return "unavailable";
    default:
        return "none";
    }
}

} // namespace ck
