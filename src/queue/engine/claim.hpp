// The claim of a queue on this node: what ck.claim, ck.claim_wait and ck.complete_and_claim run.
#pragma once

#include "base/spi.hpp"

namespace ck {

// Runs one claim, its rows appended to out. Under READ COMMITTED with the shared state it reads
// each known priority from its frontier (signal/frontier.hpp), with a snapshot taken after the
// frontier was read; otherwise, and once per full_claim_interval, the whole index in one
// statement with the snapshot `snap`. Then, when the claim came back short (or every 64th claim,
// for a queue that never runs short), the burial. Returns how many it claimed.
uint64 claim_once(Oid queue, int32 batch, Interval *lease, Snap snap, ReturnSetInfo *out);

// ck.claim_wait on this node: claims (with fresh snapshots) until it gets jobs or resolves
// dependants, or deadline passes, sleeping in between (wait.hpp); wakes when the next
// scheduled job or lease end comes due too.
void claim_wait(Oid queue, int32 batch, Interval *lease, TimestampTz deadline, ReturnSetInfo *out);

} // namespace ck
