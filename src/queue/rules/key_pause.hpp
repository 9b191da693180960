// Pause of one concurrency key (ck.pause_queue(queue, key)), at the claim. A paused key's jobs
// wait parked (ck_internal.settle_paused_key), out of the claims' way, and every path that readies
// a job of a limited key leaves them there (the key counts at a limit of 0). What can still come
// claimable is a job of the key that was leased at the pause: its lease running out, or a retry.
// A claim that takes such a job parks it, unclaimed (src/README.md, "Pause of one key").
// Queues without paused keys never come here.
#pragma once

#include "base/pg.hpp"
#include "queue/store/statements.hpp"

namespace ck {

// The rows of the claim just executed (SPI_tuptable: id, ..., old priority 6, old run_at 7,
// concurrency_key 9) whose key is paused are parked and removed from it, unless the key was
// resumed meanwhile (then they stay claimed); the others stay, in their order (SPI_processed
// follows). Returns how many stay. Outside pg_call (runs SPI).
uint64 park_paused(Oid queue, const QueuePlan &claim);

} // namespace ck
