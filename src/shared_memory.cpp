// The shmem_request and shmem_startup hooks, installed once for every request.
#include "shared_memory.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

namespace ck {

namespace {

struct Request {
    const char *name;
    size_t size;
    void **where;
    void (*init)(void *);
};

constexpr int max_requests = 4;
Request requests[max_requests];
int nrequests = 0;

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
    for (int i = 0; i < nrequests; i++)
        RequestAddinShmemSpace(requests[i].size);
}

void startup_all()
{
    if (prev_startup_hook)
        prev_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    for (int i = 0; i < nrequests; i++) {
        const Request &r = requests[i];
        bool found;
        *r.where = ShmemInitStruct(r.name, r.size, &found);
        if (!found)
            r.init(*r.where);
    }
    LWLockRelease(AddinShmemInitLock);
}

} // namespace

void shared_memory_request(const char *name, size_t size, void **where, void (*init)(void *))
{
    if (nrequests == max_requests)
        elog(ERROR, "concurrency_kit: too many shared memory requests");
    requests[nrequests++] = {name, size, where, init};
    if (nrequests > 1)
        return;   // the hooks are in place
#if PG_VERSION_NUM >= 150000
    prev_request_hook = shmem_request_hook;
    shmem_request_hook = request_all;
#endif
    prev_startup_hook = shmem_startup_hook;
    shmem_startup_hook = startup_all;
}

} // namespace ck
