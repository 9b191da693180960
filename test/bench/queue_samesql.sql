-- Queue benchmark, the statements of ck.claim and ck.complete written by hand on the same queue
-- (made by ck.create_queue: same table, indexes, token sequence, lease and attempt count): what
-- the two calls cost over their own SQL.
UPDATE jobs SET lease_token = nextval('ck.lease_tokens'), run_at = now() + interval '30 seconds', attempts = attempts + 1
WHERE id = ANY (ARRAY(SELECT id FROM jobs WHERE run_at <= now() AND attempts < 5
                      ORDER BY priority, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED))
RETURNING id, lease_token \gset
DELETE FROM jobs WHERE id = :id AND (lease_token = :lease_token) IS TRUE;
