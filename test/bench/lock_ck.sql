-- Advisory-lock benchmark: ck.xact_lock by namespace number (the same lock as the baseline's).
\set key random(1, :keys)
BEGIN;
SELECT ck.xact_lock(1, :key::int);
COMMIT;
