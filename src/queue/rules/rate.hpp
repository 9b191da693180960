// Rate limits per key (ck.set_rate_limit): claims start at most max_jobs jobs of a key in any
// window of length period, across every worker, counting claims that commit. A claim of a
// rate-limited queue counts each job it claimed on one of its key's stripe rows of ck.rate_starts
// (locked until the claim's transaction ends, so a rolled-back claim counts nothing; claims of one
// key in flight take different stripes, so they commit together); a job over its key's
// rate is given back unclaimed, at the moment its key has room (booked, so the key's jobs put off
// one after another come due at the rate): in the claim index's future, where no claim walks it.
// Queues without rate limits never come here.
#pragma once

#include "base/pg.hpp"
#include "queue/store/statements.hpp"

#include <string>

namespace ck {

// The greatest (key, stripe) row a claim has counted on so far (keys without a key first). Within
// one claim call keys are counted in key order; a claim waits only for a row above it, and gives a
// job back where it was rather than wait for a row out of order (a stripe no other claim holds it
// takes without waiting, in any order).
struct RateKeyHeld {
    bool any = false;
    bool keyed = false;
    std::string key;
    int32 stripe = -1;
    bool gave_back = false;   // a job was given back so: another round would only meet it again
};

// The rows of the claim just executed (SPI_tuptable: id, ..., old priority 6, old run_at 7, xmin
// 8, concurrency_key 9) that are within their key's rate stay in it, in their order; the others
// are put off, or given back where they were when their key's stripes with room are all held out
// of order, and removed from it (SPI_processed follows). Keys are counted in key order, and waits
// go only up (held: across the rounds of one claim call), so two claims never wait for each
// other. Returns how many stay. Outside pg_call (runs SPI).
uint64 rate_filter(Oid queue, const QueuePlan &claim, RateKeyHeld *held);

} // namespace ck
