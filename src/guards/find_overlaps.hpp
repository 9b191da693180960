// The overlapping pairs of rows of an overlap target (find_overlaps.cpp): what ck.find_overlaps
// lists and what ck.add_overlap_guard reports when it cannot add the guard.
#pragma once

#include "guards/overlap_target.hpp"

namespace ck {

// Most pairs ck.find_overlaps returns in one call (they are held in memory until returned).
constexpr int max_overlap_pairs = 1000000;

// Up to max_pairs pairs of rows that overlap, into the current SPI result-free memory:
// each pair as (a tid, b tid, key text, a_range text, b_range text) appended to store.
struct OverlapPair {
    Datum a, b;               // tid
    const char *key, *a_range, *b_range;
};
int find_overlap_pairs(const OverlapTarget &t, int max_pairs, OverlapPair *pairs);

} // namespace ck
