// The state every backend shares (claim frontier, claim_wait's wake-ups, activity counters):
// parts that modules ask for from _PG_init. Preloaded, they live in the server's shared memory,
// made at start. Otherwise the first backend that needs them after the start makes them, in
// one dynamic shared memory segment, and every other backend attaches to it at its own first
// use: on PostgreSQL 17+ through the DSM registry, on 15 and 16 through a pinned segment whose
// handle sits in a few bytes of the main shared memory (shared_memory.cpp says why that holds).
#pragma once

#include "base/pg.hpp"

namespace ck {

// From _PG_init: the part `name` of `size` bytes; once the shared state exists (at the server's
// start when preloaded, else at shared_memory_attach), *where points to it, and init has run on
// it when it was new (made again by a server restart or crash restart, never by a backend's).
// At most five parts.
void shared_memory_request(const char *name, size_t size, void **where, void (*init)(void *));

// Whether this backend has looked for the shared state yet (a cheap test for hot paths).
bool shared_memory_tried();

// Points every part at the shared state, making it when this backend is the first; at once
// when done before. False when the state cannot exist on this server (warned once: a 15 or 16
// server without room for the handle). Raises like pg_call's callees when the segment cannot
// be made or mapped now; a later call tries again.
bool shared_memory_attach();

// How this backend holds the shared state, for ck.claim_path and the docs: "preloaded",
// "dynamic" (attached on first use), "none" (not looked for yet) or "unavailable" (see above).
const char *shared_memory_mode();

} // namespace ck
