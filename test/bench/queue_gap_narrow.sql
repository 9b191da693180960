-- Queue benchmark, where the same SQL loses to the seed, step 1: the seed's claim (ready rows in id
-- order, from a partial index on id) on the row of a ck queue, writing what ck's claim writes (lease
-- end, fencing token, attempt count); the token-checked DELETE. See queue_setup.sql for the table.
UPDATE gap_narrow SET lease_token = nextval('ck.lease_tokens'), run_at = now() + interval '30 seconds', attempts = attempts + 1
WHERE id = ANY (ARRAY(SELECT id FROM gap_narrow WHERE lease_token IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED))
RETURNING id, lease_token \gset
DELETE FROM gap_narrow WHERE id = :id AND (lease_token = :lease_token) IS TRUE;
