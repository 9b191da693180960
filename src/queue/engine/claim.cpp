// The claim: one look at a queue (claim_once), from the claim frontier where it is known, with
// the burial of expired last attempts after it; and claim_wait's look-and-sleep around it.
#include "base/spi.hpp"
#include "queue/engine/claim.hpp"
#include "queue/engine/timeout.hpp"
#include "queue/engine/wait.hpp"
#include "queue/rules/dependencies.hpp"
#include "queue/rules/limits.hpp"
#include "queue/rules/key_pause.hpp"
#include "queue/rules/rate.hpp"
#include "queue/signal/activity.hpp"
#include "queue/signal/frontier.hpp"
#include "queue/signal/pause.hpp"
#include "queue/store/place.hpp"
#include "queue/store/rights.hpp"
#include "queue/store/statements.hpp"

extern "C" {
#include "utils/array.h"
#include "utils/inval.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include <algorithm>

namespace {

using ck::Activity;
using ck::check_place_columns;
using ck::FrontierView;
using ck::job_place;
using ck::JobPlace;
using ck::Place;
using ck::place_less;
using ck::QueueStatement;

int claims_since_burial = 0;

// How long a claim_wait that took the claims' lock while a pause was in progress sleeps before it
// returns, empty: the pause may be waiting for its transaction (signal/pause.hpp).
constexpr int64 pausing_nap_ms = 100;

// The claim's plan is generic and kept; made while the queue was nearly empty, it finds the
// claimed rows by scanning the whole table, which a big queue cannot afford until
// autovacuum's next ANALYZE (a minute or more). A queue four times the size it was planned at is planned again: the
// planner then sees the real size, and the plans of other backends follow at commit.
void replan_if_grown(Oid queue, const ck::QueuePlan &claim)
{
    BlockNumber now = ck::table_blocks(queue);
    if (now > 4 * claim.planned_blocks + 16)
        ck::pg_call([&] { CacheInvalidateRelcacheByRelid(queue); });
}

// How far a ClaimFrom got in each priority of its view (by position in it): the last position
// any claimed row came from, and per position the greatest old place of the rows the scan found
// where its snapshot saw them (a row updated since by a transaction that committed later, its
// xmin not visible to the snapshot, comes back as that newer version, whose place may lie beyond
// where the scan stood, so it says nothing of how far the scan got).
struct Reached {
    int last_position = -1;
    Place last[ck::frontier_max_priorities];
};

// The claimed rows of the last execution (id, lease_token, attempt, payload, lease_until, old
// priority, old run_at, old xmin) go to the result; each is ready again at its old place if this
// transaction aborts, and at its lease end once it commits (if the lease has run out by
// then). Returns how far the scan got in each priority of view (ClaimFrom).
Reached take_claimed(Oid queue, ReturnSetInfo *out, const FrontierView &view, Snapshot snapshot)
{
    return ck::pg_call([&] {
        Reached reached;
        for (int i = 0; i < view.npriorities; i++)
            reached.last[i] = Place{DT_NOBEGIN, PG_INT64_MIN};
        check_place_columns(6, 1);   // also when nothing was claimed: the same error every time
        // The rows go out in claim order: priority, then the place they were claimed at.
        uint64 *order = static_cast<uint64 *>(palloc(sizeof(uint64) * (SPI_processed + 1)));
        JobPlace *places = static_cast<JobPlace *>(palloc(sizeof(JobPlace) * (SPI_processed + 1)));
        for (uint64 i = 0; i < SPI_processed; i++) {
            order[i] = i;
            places[i] = job_place(i, 6, 1);
        }
        std::sort(order, order + SPI_processed, [&](uint64 a, uint64 b) {
            return places[a].priority != places[b].priority ? places[a].priority < places[b].priority
                                                        : place_less(places[a].place, places[b].place);
        });
        ck::append_result_rows(out, 5, order);
        pfree(order);
        for (uint64 i = 0; i < SPI_processed; i++) {
            JobPlace was = places[i];
            bool isnull;
            TransactionId xmin = DatumGetTransactionId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 8, &isnull));
            bool where_seen = snapshot == nullptr || !XidInMVCCSnapshot(xmin, snapshot);
            TimestampTz until = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 5, &isnull));
            ck::frontier_on_abort(queue, was.priority, was.place);
            ck::frontier_on_commit_lease(queue, was.priority, Place{until, was.place.id});
            if (view.mode == ck::ClaimMode::Check)
                ck::frontier_check_claimed(queue, was.priority, was.place);
            int at = 0;
            while (at < view.npriorities && view.priority[at] != was.priority)
                at++;
            if (at == view.npriorities)
                continue;   // not from a ClaimFrom
            reached.last_position = std::max(reached.last_position, at);
            if (where_seen && place_less(reached.last[at], was.place))
                reached.last[at] = was.place;
        }
        pfree(places);
        SPI_freetuptable(SPI_tuptable);   // copied: a claim_wait looks many times in one call
        return reached;
    });
}

// The queue's priorities, for a frontier not known yet; false: claim the full way.
bool discover(Oid queue, FrontierView *view, TimestampTz moment)
{
    const ck::QueuePlan &p = ck::queue_statement(QueueStatement::Priorities, queue);
    uint64 n = ck::queue_execute(p, queue, nullptr, nullptr, ck::Snap::Fresh);
    if (ck::pg_call([] { return SPI_gettypeid(SPI_tuptable->tupdesc, 1) != INT4OID; }))
        return false;   // priority altered to another type: the full claim says so
    int32 found[ck::frontier_max_priorities + 1];
    for (uint64 i = 0; i < n; i++) {
        bool isnull;
        found[i] = DatumGetInt32(ck::result_datum(i, 1, &isnull));
    }
    return ck::pg_call([&] {
        SPI_freetuptable(SPI_tuptable);
        return ck::frontier_discovered(queue, view, static_cast<int>(n), found, moment);
    });
}

// n priorities as an int4[] (the statements' priority lists).
Datum priority_array(const int32 *priorities, int n)
{
    return ck::pg_call([&] {
        Datum elems[ck::frontier_max_priorities];
        for (int i = 0; i < n; i++)
            elems[i] = Int32GetDatum(priorities[i]);
        return PointerGetDatum(construct_array(elems, n, INT4OID, sizeof(int32), true, TYPALIGN_INT));
    });
}

// The view's priorities and their frontiers as ClaimFrom's three arrays ($5, $6, $7).
void frontier_arrays(const FrontierView &view, Datum *arrays)
{
    arrays[0] = priority_array(view.priority, view.npriorities);
    ck::pg_call([&] {
        int k = view.npriorities;
        Datum r[ck::frontier_max_priorities];
        Datum i[ck::frontier_max_priorities];
        for (int j = 0; j < k; j++) {
            r[j] = TimestampTzGetDatum(view.start[j].run_at);
            i[j] = Int64GetDatum(view.start[j].id);
        }
        arrays[1] = PointerGetDatum(construct_array(r, k, TIMESTAMPTZOID, sizeof(TimestampTz), true, TYPALIGN_DOUBLE));
        arrays[2] = PointerGetDatum(construct_array(i, k, INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE));
    });
}

// The periodic full claim took the first claimable jobs in claim order, and lowered the frontier
// to any it had passed; a job it passed in a priority after the claim's last it did not reach.
// Each such known priority's first claimable job (no lock: one another claim holds only costs a
// step) lowers that priority's frontier when it lies below it, so that one interval bounds a miss
// in every priority.
void lower_to_heads(Oid queue, const FrontierView &view, int after, TimestampTz moment, int32 max_attempts, ck::Snap snap,
                    Snapshot snapshot)
{
    int rest = view.npriorities - (after + 1);
    if (rest <= 0)
        return;
    Datum values[3] = {priority_array(view.priority + after + 1, rest), TimestampTzGetDatum(moment),
                       Int32GetDatum(max_attempts)};
    const ck::QueuePlan &heads = ck::queue_statement(QueueStatement::Heads, queue);
    uint64 n = ck::queue_execute(heads, queue, values, nullptr, snap, snapshot);
    ck::pg_call([&] {
        pfree(DatumGetPointer(values[0]));
        check_place_columns(1, 3);
        for (uint64 i = 0; i < n; i++) {
            JobPlace head = job_place(i, 1, 3);
            ck::frontier_check_claimed(queue, head.priority, head.place);
        }
        SPI_freetuptable(SPI_tuptable);
    });
}

// Buries expired jobs on their last attempt (they are skipped by the claim, so they would
// otherwise linger), from the burial's frontier. Each buried job comes back if this
// transaction aborts.
void bury(Oid queue, bool timed, const FrontierView &view, TimestampTz moment, ck::Snap snap, Snapshot snapshot)
{
    // Attempts that reached their timeout first (timed: the queue has one): those on their last
    // attempt are buried as 'timeout', not as expired leases; while some may be left, no burial
    // passes them.
    if (timed && ck::time_out(queue, view, moment, snap, snapshot))
        return;
    const ck::QueuePlan &bury = ck::queue_statement(QueueStatement::Bury, queue);
    Datum args[3] = {Int32GetDatum(bury.max_attempts), TimestampTzGetDatum(moment), TimestampTzGetDatum(view.bury_from)};
    uint64 n;
    {
        ck::DeadDepartures departing("lease expired on the last attempt");
        n = ck::queue_execute(bury, queue, args, nullptr, snap, snapshot);
    }
    Datum *buried = ck::pg_call([&] {   // their ids: the commit wakes their awaiters
        Datum *ids = n > 0 ? static_cast<Datum *>(palloc(sizeof(Datum) * n)) : nullptr;
        for (uint64 i = 0; i < n; i++) {
            JobPlace was = job_place(i, 2, 1);
            ck::frontier_on_abort(queue, was.priority, was.place);
            ids[i] = Int64GetDatum(was.place.id);
        }
        SPI_freetuptable(SPI_tuptable);
        return ids;
    });
    ck::count_at_commit(queue, Activity::Buried, n, buried);
    ck::pg_call([&] {
        if (buried != nullptr)
            pfree(buried);
        if (view.mode != ck::ClaimMode::Full && n < static_cast<uint64>(ck::bury_batch))
            ck::frontier_bury_advance(queue, view, moment);
    });
}

// The earliest future run_at of the queue after `now` (a scheduled job, a retry, a lease
// end), or DT_NOEND when there is none.
// With the frontier known it looks only up to a second ahead and returns now + 1 s when
// nothing is due by then: the entries it walks are those of that second, dead ones included
// (a held xmin horizon keeps the lease ends of every job completed within a lease).
TimestampTz next_due(Oid queue, TimestampTz now)
{
    FrontierView view;
    bool known = ck::pg_call([&] { return ck::frontier_read(queue, &view); });
    uint64 n;
    if (known) {
        const ck::QueuePlan &p = ck::queue_statement(QueueStatement::NextDueOf, queue);
        Datum priorities = priority_array(view.priority, view.npriorities);
        TimestampTz ahead = now + USECS_PER_SEC;
        Datum values[3] = {TimestampTzGetDatum(now), priorities, TimestampTzGetDatum(ahead)};
        n = ck::queue_execute(p, queue, values, nullptr, ck::Snap::Fresh);
        bool isnull = true;
        Datum due = n > 0 ? ck::result_datum(0, 1, &isnull) : (Datum) 0;
        return isnull ? ahead : DatumGetTimestampTz(due);
    } else {
        const ck::QueuePlan &p = ck::queue_statement(QueueStatement::NextDue, queue);
        Datum values[1] = {TimestampTzGetDatum(now)};
        n = ck::queue_execute(p, queue, values, nullptr, ck::Snap::Fresh);
    }
    bool isnull = true;
    Datum due = n > 0 ? ck::result_datum(0, 1, &isnull) : (Datum) 0;
    return isnull ? DT_NOEND : DatumGetTimestampTz(due);
}

// One claim (claim_once) of up to batch jobs; *scanned: how many the claim statement took, before a
// rate-limited queue gave back those over their key's rate.
uint64 claim_round(Oid queue, int32 batch, Interval *lease, ck::Snap snap, ReturnSetInfo *out, uint64 *scanned,
                   ck::RateKeyHeld *held)
{
    // A paused queue (or one a pause is in progress on) claims nothing, and buries nothing.
    const ck::QueuePlan *open = ck::open_claims(queue);
    if (open == nullptr)
        return 0;
    const ck::QueuePlan &claim = *open;
    Interval effective = lease ? *lease : claim.lease;
    TimestampTz moment = GetCurrentTimestamp();
    // A queue with a timeout: no lease longer than it, and the attempt's deadline ($8).
    char nulls[9] = "       n";
    Datum deadline = 0;
    if (claim.timed) {
        effective = ck::timed_lease(claim, effective);
        deadline = TimestampTzGetDatum(ck::timed_deadline(claim, moment));
        nulls[7] = ' ';
    }
    FrontierView view;
    if (!IsolationUsesXactSnapshot())
        view = ck::pg_call([&] { return ck::frontier_view(queue, moment); });
    if (view.mode == ck::ClaimMode::Discover)
        view.mode = discover(queue, &view, moment) ? ck::ClaimMode::Frontier : ck::ClaimMode::Full;
    // The frontier's rule: a snapshot taken after the view was read (READ COMMITTED).
    Snapshot snapshot = view.mode == ck::ClaimMode::Full ? nullptr
                                                           : ck::pg_call([] { return RegisterSnapshot(GetTransactionSnapshot()); });

    // With no priority known there is no statement to run, and so no privilege checked by
    // one: a caller without SELECT and UPDATE on the queue runs the full claim, which raises
    // what the hand-written claim would (or succeeds on column privileges).
    if (view.mode == ck::ClaimMode::Frontier && view.npriorities == 0 && !ck::may_claim(queue))
        view.mode = ck::ClaimMode::Full;

    // Runs the claim statement p: *scanned is what it took; a queue with paused keys parks their
    // jobs, a rate-limited queue gives back the jobs over their key's rate, and keeps the rest.
    auto run = [&](const ck::QueuePlan &p, Datum *values) {
        *scanned = ck::queue_execute(p, queue, values, nulls, snap, snapshot);
        uint64 kept = claim.paused_keys.empty() ? *scanned : ck::park_paused(queue, claim);
        return claim.rates.any() ? ck::rate_filter(queue, claim, held) : kept;
    };
    uint64 n = 0;
    const ck::QueuePlan *used = &claim;
    if (view.mode == ck::ClaimMode::Frontier && view.npriorities > 0) {
        // Every known priority in one statement, each from its frontier, in priority order (one
        // priority: without the arrays).
        bool one = view.npriorities == 1;
        const ck::QueuePlan &from = ck::queue_statement(one ? QueueStatement::ClaimFromOne : QueueStatement::ClaimFrom, queue);
        used = &from;
        Datum values[8] = {Int32GetDatum(batch), IntervalPGetDatum(&effective), Int32GetDatum(claim.max_attempts),
                           TimestampTzGetDatum(moment), Int32GetDatum(view.priority[0]),
                           TimestampTzGetDatum(view.start[0].run_at), Int64GetDatum(view.start[0].id), deadline};
        if (!one)
            frontier_arrays(view, &values[4]);
        n = run(from, values);
        // A claim_wait looks many times in one call: nothing of a look is kept.
        if (!one)
            ck::pg_call([&] {
                for (int j = 4; j < 7; j++)
                    pfree(DatumGetPointer(values[j]));
            });
        Reached reached = take_claimed(queue, out, view, snapshot);
        // The scan read the priorities in order: each one it left before the batch was full came
        // back short (nothing claimable is left in it up to the moment); the one it stopped in
        // got as far as its last claimed job; those after it were not read. A short batch read
        // them all.
        bool all_short = *scanned < static_cast<uint64>(batch);
        ck::pg_call([&] {
            for (int j = 0; j < view.npriorities && (all_short || j <= reached.last_position); j++) {
                bool left = all_short || j < reached.last_position;
                ck::frontier_advance(queue, view, view.priority[j], left ? Place{moment, PG_INT64_MIN} : reached.last[j]);
            }
        });
    } else if (view.mode != ck::ClaimMode::Frontier) {
        Datum values[8] = {Int32GetDatum(batch), IntervalPGetDatum(&effective), Int32GetDatum(claim.max_attempts),
                           TimestampTzGetDatum(moment), 0, 0, 0, deadline};
        nulls[4] = nulls[5] = nulls[6] = 'n';   // the arrays of the claims from frontiers
        n = run(claim, values);
        Reached reached = take_claimed(queue, out, view, snapshot);
        // A short batch read every claimable job: nothing passed is left behind.
        if (view.mode == ck::ClaimMode::Check && *scanned == static_cast<uint64>(batch))
            lower_to_heads(queue, view, reached.last_position, moment, claim.max_attempts, snap, snapshot);
    }
    // Also every 64th claim: in a queue that never runs short they would wait forever.
    if (*scanned < static_cast<uint64>(batch) || ++claims_since_burial >= 64) {
        claims_since_burial = 0;
        replan_if_grown(queue, *used);
        if (ck::may_bury(queue, claim.dead_letters))
            bury(queue, claim.timed, view, moment, snap, snapshot);
    }
    if (snapshot != nullptr)
        ck::pg_call([&] { UnregisterSnapshot(snapshot); });
    ck::count_at_commit(queue, Activity::Claimed, n);
    return n;
}

} // namespace

namespace ck {

uint64 claim_once(Oid queue, int32 batch, Interval *lease, Snap snap, ReturnSetInfo *out)
{
    uint64 scanned = 0;
    RateKeyHeld held;
    uint64 got = claim_round(queue, batch, lease, snap, out, &scanned, &held);
    // A rate-limited queue's claim that gave jobs back claims again for the rest of its batch
    // (those jobs are out of its way now), while the queue had as many as it asked for: a few
    // rounds at most. (Without rate limits a round keeps all it scanned: no second round.)
    int32 asked = batch;
    for (int round = 1; got < static_cast<uint64>(batch) && scanned == static_cast<uint64>(asked) && !held.gave_back
                        && round < 8; round++) {
        asked = batch - static_cast<int32>(got);
        got += claim_round(queue, asked, lease, snap, out, &scanned, &held);
    }
    return got;
}

void claim_wait(Oid queue, int32 batch, Interval *lease, TimestampTz deadline, ReturnSetInfo *out)
{
    // The slots of jobs a look buries are handed on at the end: no key's slot row is held while
    // the call sleeps or claims again (see ck.complete_and_claim).
    DeferredDepartures departures;
    wait_for_jobs(queue, WakeOn::Ready, deadline, true,
                  [&] {
                      // Each look needs a new snapshot to see jobs committed while we wait.
                      uint64 claimed = claim_once(queue, batch, lease, Snap::Fresh, out);
                      // A pause in progress may be waiting for this transaction (it held the
                      // claims' lock before this look): it returns, empty.
                      if (last_claim_gate() == ClaimGate::Pausing && claim_lock_held_before())
                          return true;
                      // Dependants it made ready are claimable once this call's transaction
                      // commits: it returns rather than sleep on the rows it locked for them.
                      return resolve_after_claim(queue, claimed) || claimed > 0;
                  },
                  [&](TimestampTz now) {
                      // Paused: nothing comes due before the resume, which wakes us. A pause in
                      // progress that may have found this transaction's lock after this look took
                      // it: one short nap, then the look above returns (the pause's end wakes us
                      // sooner).
                      switch (last_claim_gate()) {
                      case ClaimGate::Open:
                          return next_due(queue, now);
                      case ClaimGate::Paused:
                          return DT_NOEND;
                      case ClaimGate::Pausing:
                          break;
                      }
                      return now + pausing_nap_ms * 1000;
                  });
    departures.hand_over();
    resolve_deferred(queue);
}

} // namespace ck
