-- Rate benchmark, baseline: the UPDATE ck.try_rate runs, written by hand (the row exists).
\set key random(1, :keys)
UPDATE ck.rates AS r
SET stamps = r.stamps[GREATEST(cardinality(r.stamps) - :n + 2, 1):] || clock_timestamp()
WHERE r.key = 'bench:' || :key
  AND (cardinality(r.stamps) < :n OR r.stamps[cardinality(r.stamps) - :n + 1] <= clock_timestamp() - interval '1 second');
