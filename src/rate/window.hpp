// A rate window kept in one row of constant size, whatever n: counters of ten sub-windows. Both
// ck.rates (ck.try_rate) and ck.rate_starts (a queue's rate limits) hold one per key, in the
// columns width, bucket, total, marks, and count with the statements built here.
#pragma once

#include "base/pg.hpp"

#include <string>

namespace ck {

// Time is cut into buckets of width microseconds, ceil(period / 10): bucket b holds the moments
// [b * width, (b + 1) * width) since 1970. A row keeps the latest bucket it counted in (bucket),
// how many it ever counted (total) and, for k = 0..10, how many it had counted before bucket -
// k began (marks[k + 1]): so total - marks[k + 1] is the count of the 11 buckets' last k + 1. A
// call at bucket c counts the buckets c - 10 .. c, which cover (now - period, now] and at most a
// tenth of the period (rounded up to a microsecond, at most 10 µs more when period is not a
// multiple of 10 µs) before it: a count is kept at most that long past its period, never less.
constexpr int rate_buckets = 10;

// The bucket width of a period: ceil(period in microseconds / 10), a month as 30 days.
int64 rate_width(const Interval *period);

// The pieces of the statements, the row aliased r, the limit and the width given as the
// parameters max ($n, integer) and width ($n, bigint). bucket: the bucket of now as a parameter
// ($n, bigint, read by the caller), for a statement that never waits for the row; empty: the
// clock read as the expression runs, after the row lock.
struct RateWindowSql {
    std::string room;      // condition: the row has the call's width and room for one more now
    std::string count;     // SET list: one more counted now (the clock read once, after the row lock)
    std::string columns;   // INSERT column list of a key's first call ...
    std::string values;    // ... and its values: that call counted
    std::string empty;     // ... or nothing counted yet (a queue key's stripes, made before they count)
    std::string rescale;   // SET list: the row's counts moved to the call's width (see window.cpp)
    std::string other;     // condition: the row has another width
    std::string next;      // timestamptz: the start of the first bucket at which the key has room
};

RateWindowSql rate_window_sql(const std::string &max, const std::string &width, const std::string &bucket = "");

// The bucket of a moment at a width (the caller's reading of the clock for bucket above).
int64 rate_bucket(TimestampTz at, int64 width);

} // namespace ck
