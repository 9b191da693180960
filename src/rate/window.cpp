// The statements of a rate window (rate/window.hpp): shared by ck.rates and ck.rate_starts.
#include "rate/window.hpp"
#include "base/args.hpp"
#include "base/qualify.hpp"

#include <algorithm>
#include <cmath>

namespace ck {

int64 rate_width(const Interval *period)
{
    // At most 100 years (the callers check): exact in a double, far from int64's end.
    auto usecs = static_cast<int64>(std::ceil(interval_usecs(period)));
    return std::max<int64>(1, (usecs + rate_buckets - 1) / rate_buckets);
}

int64 rate_bucket(TimestampTz at, int64 width)
{
    // Microseconds since 1970, as EXTRACT(epoch ...) * 1000000 reads them; floor, as div does for
    // moments after 1970.
    int64 usecs = at + (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
    return usecs >= 0 ? usecs / width : -((-usecs + width - 1) / width);
}

RateWindowSql rate_window_sql(const std::string &max, const std::string &width, const std::string &bucket)
{
    // The bucket of the clock, read when the expression runs: on the row's latest version once it
    // is locked (a concurrent update that committed first makes PostgreSQL evaluate it again).
    // Given as a parameter, it is the caller's reading, a moment before the statement.
    const std::string now = !bucket.empty() ? bucket
        : "pg_catalog.div(EXTRACT(epoch FROM pg_catalog.clock_timestamp())" CK_OP("*")
          "1000000, " + width + "::pg_catalog.numeric)::pg_catalog.int8";
    // Buckets past the latest one, 0 to 11: a clock behind the row's latest bucket (a step back,
    // another server's clock) counts in that bucket, so a key's buckets never go back.
    auto ahead = [](const std::string &b) {
        return "LEAST(GREATEST(" + b + CK_OP("-") "r.bucket, 0), 11)::pg_catalog.int4";
    };
    RateWindowSql s;
    // The count of the buckets c - 10 .. c: total - marks[11 - (c - bucket)], none when all left.
    s.room = "r.width" CK_OP("=") + width + " AND COALESCE(r.total" CK_OP("-") "r.marks[11" CK_OP("-") + ahead(now) +
             "], 0)" CK_OP("<") + max;
    // One reading of the clock for the three columns (a sub-select of the row, which PostgreSQL
    // does not flatten since its target list is volatile): moving to bucket
    // c shifts the marks by c - bucket, the new ones all total (nothing counted in between).
    // Given as a parameter, it is used as it is.
    auto count = [&](const std::string &b) {
        return "GREATEST(" + b + ", r.bucket), CASE WHEN " + b + CK_OP("<=") "r.bucket THEN r.marks"
               " ELSE pg_catalog.array_cat(pg_catalog.array_fill(r.total, ARRAY[" + ahead(b) + "]), r.marks[1:11" CK_OP("-") +
               ahead(b) + "]) END, r.total" CK_OP("+") "1";
    };
    s.count = bucket.empty() ? "(bucket, marks, total) = (SELECT " + count("n.b") + " FROM (SELECT " + now + " AS b) AS n)"
                             : "(bucket, marks, total) = ROW(" + count(bucket) + ")";
    s.columns = "width, bucket, total, marks";
    auto first = [&](const char *total) { return width + ", " + now + ", " + total + ", pg_catalog.array_fill(0::pg_catalog.int8, ARRAY[11])"; };
    s.values = first("1");
    s.empty = first("0");
    // Another width (the period changed): every start still counted moves to the bucket of the new
    // width that holds the end of the row's latest bucket: later than it was, so kept as long at
    // least. Starts out of the old window are forgotten, as they would have been.
    s.rescale = "width = " + width + ", bucket = ((r.bucket" CK_OP("+") "1)" CK_OP("*") "r.width" CK_OP("-") "1)" CK_OP("/") +
                width + ", marks = pg_catalog.array_fill(r.marks[11], ARRAY[11])";
    s.other = "r.width" CK_OP("<>") + width;
    // The first bucket c with total - marks[11 - (c - bucket)] < max: the marks above total - max
    // are a prefix (they only grow towards the newest), of length j; c = bucket + 11 - j.
    // (OPERATOR(...) binds all alike, left to right: parenthesized.)
    s.next = "pg_catalog.to_timestamp(0)" CK_OP("+") "(((r.bucket" CK_OP("+") "11" CK_OP("-") "(SELECT pg_catalog.count(*)"
             " FROM pg_catalog.unnest(r.marks) AS m WHERE m" CK_OP(">") "(r.total" CK_OP("-") + max + ")))" CK_OP("*")
             "r.width)::pg_catalog.float8" CK_OP("*") "'1 microsecond'::pg_catalog.interval)";
    return s;
}

} // namespace ck
