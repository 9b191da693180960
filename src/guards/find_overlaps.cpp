// ck.find_overlaps: the pairs of existing rows an overlap guard would reject. An exclusion
// constraint cannot be added NOT VALID, so this audit is the safe route on a live table.
// One sorted pass (by key, then range start) keeps only the ranges that can still
// overlap what follows: O(n log n), not a self-join.
#include "base/args.hpp"
#include "base/boundary.hpp"
#include "guards/find_overlaps.hpp"
#include "base/spi.hpp"

extern "C" {
#include "utils/fmgroids.h"
#include "utils/datum.h"
#include "utils/fmgrprotos.h"
}

#include <string>

namespace ck {

namespace {

// A range still able to overlap later rows of its key group.
struct Active {
    Datum ctid;
    Datum range;
    const char *text;
    bool reported;   // a pair points at ctid and text: keep them
};

// Frees what a pruned range holds, unless a reported pair still points at it.
void release(const Active &a)
{
    pfree(DatumGetPointer(a.range));
    if (!a.reported) {
        pfree(DatumGetPointer(a.ctid));
        pfree((void *) a.text);
    }
}

constexpr long fetch_rows = 10000;

} // namespace

int find_overlap_pairs(const OverlapTarget &t, int max_pairs, OverlapPair *pairs)
{
    std::string keys, key_text = "NULL::pg_catalog.text";
    for (int i = 0; i < t.nkeys; i++) {
        keys += std::string(i ? ", " : "") + t.keys[i].sql;
    }
    if (t.nkeys > 0)
        key_text = "ROW(" + keys + ")::pg_catalog.text";
    std::string group = t.nkeys > 0 ? "pg_catalog.dense_rank() OVER (ORDER BY " + keys + ")" : "1::bigint";
    std::string sql = std::string("SELECT ctid, ") + group + " AS g, " + key_text + ", " + t.range.sql + ", " +
                      t.range.sql + "::pg_catalog.text FROM " + t.table.rows_sql + " WHERE " + t.range.sql +
                      " IS NOT NULL AND NOT pg_catalog.isempty(" + t.range.sql + ") ORDER BY g, pg_catalog.lower(" +
                      t.range.sql + ") NULLS FIRST";

    int found = 0;
    pg_call([&] {
        FmgrInfo overlaps, before;
        fmgr_info(t.multirange ? F_MULTIRANGE_OVERLAPS_MULTIRANGE : F_RANGE_OVERLAPS, &overlaps);
        fmgr_info(t.multirange ? F_MULTIRANGE_BEFORE_MULTIRANGE : F_RANGE_BEFORE, &before);
        int16 typlen;
        bool typbyval;
        get_typlenbyval(t.range.type, &typlen, &typbyval);

        MemoryContext keep = CurrentMemoryContext;   // survives each batch's SPI result
        Portal portal = SPI_cursor_open_with_args(nullptr, sql.c_str(), 0, nullptr, nullptr, nullptr, true, 0);
        int nactive = 0, capacity = 64;
        Active *active = (Active *) palloc(capacity * sizeof(Active));
        int64 current_group = -1;
        const char *current_key = nullptr;
        bool key_reported = false;
        while (found < max_pairs) {
            SPI_cursor_fetch(portal, true, fetch_rows);
            if (SPI_processed == 0)
                break;
            for (uint64 row = 0; row < SPI_processed && found < max_pairs; row++) {
                HeapTuple tup = SPI_tuptable->vals[row];
                TupleDesc desc = SPI_tuptable->tupdesc;
                bool isnull;
                int64 g = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
                MemoryContext old = MemoryContextSwitchTo(keep);
                if (g != current_group) {   // a new key: nothing before it can overlap
                    for (int i = 0; i < nactive; i++)
                        release(active[i]);
                    nactive = 0;
                    current_group = g;
                    if (current_key != nullptr && !key_reported)
                        pfree((void *) current_key);
                    current_key = SPI_getvalue(tup, desc, 3);
                    key_reported = false;
                }
                Datum ctid = datumCopy(SPI_getbinval(tup, desc, 1, &isnull), false, sizeof(ItemPointerData));
                Datum range = datumCopy(SPI_getbinval(tup, desc, 4, &isnull), typbyval, typlen);
                const char *text = SPI_getvalue(tup, desc, 5);
                MemoryContextSwitchTo(old);

                // Ranges that end before this one starts cannot overlap it or any later one.
                int kept = 0;
                for (int i = 0; i < nactive; i++) {
                    if (DatumGetBool(FunctionCall2Coll(&before, InvalidOid, active[i].range, range)))
                        release(active[i]);
                    else
                        active[kept++] = active[i];
                }
                nactive = kept;
                bool reported = false;
                for (int i = 0; i < nactive && found < max_pairs; i++) {
                    if (DatumGetBool(FunctionCall2Coll(&overlaps, InvalidOid, active[i].range, range))) {
                        active[i].reported = reported = key_reported = true;
                        OverlapPair *p = &pairs[found++];
                        p->a = active[i].ctid;
                        p->b = ctid;
                        p->key = current_key;
                        p->a_range = active[i].text;
                        p->b_range = text;
                    }
                }
                if (nactive == capacity) {
                    capacity *= 2;
                    active = (Active *) repalloc(active, capacity * sizeof(Active));
                }
                active[nactive++] = {ctid, range, text, reported};
            }
            SPI_freetuptable(SPI_tuptable);
        }
        SPI_cursor_close(portal);
    });
    return found;
}

} // namespace ck

CK_FUNCTION(ck_find_overlaps)
{
    ck::require_arg(fcinfo, 3, "max_pairs");
    int max_pairs = PG_GETARG_INT32(3);
    if (max_pairs < 1 || max_pairs > ck::max_overlap_pairs)
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE,
                        ck::fmt("max_pairs must be between 1 and %d, got %d", ck::max_overlap_pairs, max_pairs));
    ck::OverlapTarget t = ck::overlap_target(fcinfo);
    ck::spi_connect();
    ck::OverlapPair *pairs = ck::pg_call([&] { return (ck::OverlapPair *) palloc(max_pairs * sizeof(ck::OverlapPair)); });
    int n = ck::find_overlap_pairs(t, max_pairs, pairs);
    ck::pg_call([&] {
        ReturnSetInfo *rsinfo = ck::begin_result_set(fcinfo);
        for (int i = 0; i < n; i++) {
            Datum values[5] = {pairs[i].a, pairs[i].b,
                               pairs[i].key ? CStringGetTextDatum(pairs[i].key) : (Datum) 0,
                               CStringGetTextDatum(pairs[i].a_range), CStringGetTextDatum(pairs[i].b_range)};
            bool nulls[5] = {false, false, pairs[i].key == nullptr, false, false};
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        }
    });
    ck::spi_finish();
    return (Datum) 0;
}
