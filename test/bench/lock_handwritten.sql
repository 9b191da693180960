-- Advisory-lock benchmark, baseline: the built-in two-int transaction lock, in a short transaction.
\set key random(1, :keys)
BEGIN;
SELECT pg_advisory_xact_lock(1, :key);
COMMIT;
