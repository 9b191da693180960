-- Queue benchmark, where the same SQL loses to the seed, step 2: step 1 with ck's claim order
-- (priority, run_at, id), from a partial index on those three columns: entries twice as wide.
UPDATE gap_wide SET lease_token = nextval('ck.lease_tokens'), run_at = now() + interval '30 seconds', attempts = attempts + 1
WHERE id = ANY (ARRAY(SELECT id FROM gap_wide WHERE lease_token IS NULL ORDER BY priority, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED))
RETURNING id, lease_token \gset
DELETE FROM gap_wide WHERE id = :id AND (lease_token = :lease_token) IS TRUE;
