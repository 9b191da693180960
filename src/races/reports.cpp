// The ring of reports. Writers never wait for each other: each takes the next number with an
// atomic add and writes its slot between two stores of a sequence number (odd while it
// writes); a reader copies a slot and keeps the copy only if the sequence number was even and
// did not move (a writer that laps a reader costs that one report, never a torn one).
// A reset stores the number below which reports no longer show.
//
// ck.race_reports shows this database's reports; the statements' texts and the key only to
// roles that may see the reporting role's statements (its members, pg_read_all_stats), as
// pg_stat_activity does.
#include "races/reports.hpp"
#include "base/boundary.hpp"
#include "base/shared_memory.hpp"
#include "base/spi.hpp"
#include "races/mode.hpp"

extern "C" {
#include "catalog/pg_authid.h"
#include "port/atomics.h"
#include "utils/acl.h"
#include "utils/timestamp.h"
}

#include <cstring>

namespace ck {

namespace {

struct Slot {
    pg_atomic_uint64 seq;   // 0: never written; 2n + 1: report n being written; 2n + 2: report n
    RaceReport report;
};

struct Ring {
    pg_atomic_uint64 next;         // the next report's number
    pg_atomic_uint64 shown_from;   // reports numbered below it were reset
    Slot slots[race_reports_kept];
};

Ring *ring = nullptr;

void init_ring(void *where)
{
    Ring *r = static_cast<Ring *>(where);
    pg_atomic_init_u64(&r->next, 0);
    pg_atomic_init_u64(&r->shown_from, 0);
    for (Slot &s : r->slots)
        pg_atomic_init_u64(&s.seq, 0);
}

// The report in slot i, copied into out; false when it is empty, being written or reset.
bool read_slot(int i, RaceReport *out)
{
    Slot &s = ring->slots[i];
    uint64 before = pg_atomic_read_u64(&s.seq);
    if (before == 0 || before % 2 == 1)
        return false;
    pg_read_barrier();
    memcpy(out, &s.report, sizeof *out);
    pg_read_barrier();
    return pg_atomic_read_u64(&s.seq) == before && (before - 2) / 2 >= pg_atomic_read_u64(&ring->shown_from);
}

} // namespace

void race_report_keep(const RaceReport &r)
{
    if (!shared_memory_attach())
        return;
    uint64 n = pg_atomic_fetch_add_u64(&ring->next, 1);
    Slot &s = ring->slots[n % race_reports_kept];
    pg_atomic_write_u64(&s.seq, 2 * n + 1);
    pg_write_barrier();
    memcpy(&s.report, &r, sizeof r);
    pg_write_barrier();
    pg_atomic_write_u64(&s.seq, 2 * n + 2);
}

void race_reports_init()
{
    shared_memory_request("concurrency_kit race reports", sizeof(Ring), reinterpret_cast<void **>(&ring), init_ring);
}

} // namespace ck

namespace {

const char *level_name(int level)
{
    return level == ck::RACE_ERROR ? "error" : level == ck::RACE_WARNING ? "warning" : "log";
}

} // namespace

// ck.race_reports(): the kept reports of this database, oldest first.
CK_FUNCTION(ck_race_reports)
{
    ck::pg_call([&] {
        ReturnSetInfo *rsinfo = ck::begin_result_set(fcinfo);
        if (!ck::shared_memory_attach())
            return;
        bool all_texts = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
        uint64 next = pg_atomic_read_u64(&ck::ring->next);
        uint64 first = next > ck::race_reports_kept ? next - ck::race_reports_kept : 0;
        ck::RaceReport r;
        for (uint64 n = first; n < next; n++) {
            if (!ck::read_slot(static_cast<int>(n % ck::race_reports_kept), &r) || r.database != MyDatabaseId)
                continue;
            bool texts = all_texts || has_privs_of_role(GetUserId(), r.role);
            const char *role = GetUserNameFromId(r.role, true);
            Datum values[10] = {
                TimestampTzGetDatum(r.at),
                Int32GetDatum(r.pid),
                role != nullptr ? CStringGetDatum(role) : (Datum) 0,
                CStringGetTextDatum(r.table),
                texts ? CStringGetTextDatum(r.key) : (Datum) 0,
                CStringGetTextDatum(r.columns),
                TransactionIdGetDatum(r.changed_by),
                texts ? CStringGetTextDatum(r.read) : (Datum) 0,
                texts ? CStringGetTextDatum(r.write) : (Datum) 0,
                CStringGetTextDatum(level_name(r.level)),
            };
            if (role != nullptr)
                values[2] = DirectFunctionCall1(namein, CStringGetDatum(role));
            bool nulls[10] = {false, false, role == nullptr, false, !texts, false, false, !texts, !texts, false};
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        }
    });
    return (Datum) 0;
}

// ck.race_reports_reset(): hides every report kept so far; how many were shown.
CK_FUNCTION(ck_race_reports_reset)
{
    int64 hidden = ck::pg_call([&] {
        if (!ck::shared_memory_attach())
            return static_cast<int64>(0);
        uint64 next = pg_atomic_read_u64(&ck::ring->next);
        uint64 from = pg_atomic_exchange_u64(&ck::ring->shown_from, next);
        uint64 kept = next - Max(from, next > ck::race_reports_kept ? next - ck::race_reports_kept : 0);
        return static_cast<int64>(from > next ? 0 : kept);
    });
    return Int64GetDatum(hidden);
}
