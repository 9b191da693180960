-- Advisory-lock benchmark: ck.xact_lock by namespace name (cached per backend after first use).
\set key random(1, :keys)
BEGIN;
SELECT ck.xact_lock('bench', :key::int);
COMMIT;
