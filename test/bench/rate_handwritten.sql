-- Rate benchmark, baseline: the UPDATE ck.try_rate runs, written by hand (the row exists; buckets of
-- a tenth of a second: width 100,000 microseconds; src/rate/window.hpp).
\set key random(1, :keys)
UPDATE ck.rates AS r
SET (bucket, marks, total) = (
    SELECT GREATEST(n.b, r.bucket),
           CASE WHEN n.b <= r.bucket THEN r.marks
                ELSE array_fill(r.total, ARRAY[LEAST(n.b - r.bucket, 11)::int]) || r.marks[1:11 - LEAST(n.b - r.bucket, 11)::int] END,
           r.total + 1
    FROM (SELECT div(extract(epoch FROM clock_timestamp()) * 1000000, 100000)::bigint AS b) AS n)
WHERE r.key = 'bench:' || :key AND r.width = 100000
  AND COALESCE(r.total - r.marks[11 - LEAST(GREATEST(div(extract(epoch FROM clock_timestamp()) * 1000000, 100000)::bigint
                                                      - r.bucket, 0), 11)::int], 0) < :n;
