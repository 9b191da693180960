-- Rate benchmark: ck.try_rate, n calls per second of a random key among :keys.
\set key random(1, :keys)
SELECT ck.try_rate('bench:' || :key, :n, '1 second');
