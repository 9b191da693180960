// Shared memory for the modules that keep state across backends (library preloaded): each
// asks for a named struct from _PG_init and is handed it once the server has made it.
#pragma once

#include "pg.hpp"

namespace ck {

// While the library is being preloaded: reserves size bytes under name; once shared memory
// exists, *where points to them, and init runs on them when they are new (not after a
// restart of a backend, only of the server). At most four requests.
void shared_memory_request(const char *name, size_t size, void **where, void (*init)(void *));

} // namespace ck
