// The claim frontier: where each priority's claims start reading the claim index, so that a
// claim's cost follows the claimable jobs and not the dead entries that a held xmin horizon
// keeps. Shared per queue (shared_memory.hpp); see signal/frontier.cpp for why it is safe.
#pragma once

#include "base/pg.hpp"
#include "queue/store/place.hpp"
#include "queue/store/statements.hpp"

extern "C" {
#include "commands/trigger.h"
}

namespace ck {

// How a claim runs, decided before its snapshot is taken.
enum class ClaimMode {
    Full,        // the one statement over the whole index, nothing learnt (no shared state,
                 // REPEATABLE READ, too many priorities, or the frontier is switched off)
    Discover,    // the queue's priorities are not known yet: find them, then as Frontier
    Frontier,    // one statement per known priority, from its frontier
    Check,       // the periodic full claim: the whole index, and a job the frontier would
                 // have missed resets it
};

struct FrontierView {
    ClaimMode mode = ClaimMode::Full;
    uint64 generation = 0;   // of the slot it was read from
    uint64 epoch = 0;        // lowerings counted so far; an advance is checked against those since
    uint64 resets = 0;       // resets counted so far; a discovery is void after another
    int npriorities = 0;
    int32 priority[frontier_max_priorities];
    Place start[frontier_max_priorities];
    TimestampTz bury_from = DT_NOBEGIN;   // expired leases below it were seen and not buriable
};

// Defines the GUC and asks for the shared memory; from _PG_init.
void queue_frontier_init();

// The rest never raise but for attaching to the shared state (shared_memory_attach: call them
// inside pg_call); they are no-ops without it.

// The claim's view of queue's frontier at `now` (the claim's moment).
FrontierView frontier_view(Oid queue, TimestampTz now);

// After a claim of priority that read with a snapshot taken after view was read: every
// entry of that priority below `to` is unclaimable, bar the rows of lowerings since. Same
// for the burial and the leased entries below `to`.
void frontier_advance(Oid queue, const FrontierView &view, int32 priority, Place to);
void frontier_bury_advance(Oid queue, const FrontierView &view, TimestampTz to);

// Discovery (with a snapshot taken after view was read) found these priorities, ascending.
// True: view now holds the frontier to claim from. False when it stays unknown (too many
// priorities, or a reset came in between): claim the full way.
bool frontier_discovered(Oid queue, FrontierView *view, int n, const int32 *priorities, TimestampTz now);

// The queue's frontier as it stands, for ck.claim_frontier; false when it is not known.
bool frontier_read(Oid queue, FrontierView *view);

// Which way this backend's next claim of queue goes ("frontier", "discover" or "full") and why,
// for ck.claim_path and ck.create_queue's notice.
struct ClaimPath {
    const char *path;
    const char *reason;
};
ClaimPath frontier_path(Oid queue);

// The periodic full claim took a job at place: if the frontier would have missed it (its
// priority unknown, or place below the priority's frontier), the frontier is lowered to it.
void frontier_check_claimed(Oid queue, int32 priority, Place place);

// From the queue's AFTER INSERT statement trigger: each inserted job is ready at its place once
// this transaction commits (read from the transition table; without one, a reset). Raises
// like pg_call's callees.
void frontier_on_insert(TriggerData *trigger);

// What this transaction did, applied when it ends. A row this (sub)transaction locked or
// changed is ready again at place if it aborts; a row it made ready at place is ready once it
// commits; a reset forgets the frontier whichever way it ends (the queue's settings changed,
// jobs came in with no transition table to say where, plain SQL updated or deleted jobs).
void frontier_on_abort(Oid queue, int32 priority, Place place);
void frontier_on_commit(Oid queue, int32 priority, Place place);
void frontier_at_end(Oid queue, int32 priority, Place place);           // either way
void frontier_on_commit_lease(Oid queue, int32 priority, Place place);   // a claim's lease end
void frontier_reset_at_end(Oid queue);

// After a statement that locked, changed or removed job id: if this transaction aborts, the
// job is ready again where it was (columns col, col + 1 of the first result row: priority,
// run_at). Outside pg_call.
void ready_again_on_abort(Oid queue, Datum id, int col);

} // namespace ck
