-- Queue benchmark, the statements of ck.claim and ck.complete written by hand on a queue made by
-- ck.create_queue like the one queue_ck.sql uses (same table, indexes, token sequence, lease and
-- attempt count): what the two calls cost over their own SQL.
UPDATE jobs_samesql SET lease_token = nextval('ck.lease_tokens'), run_at = now() + interval '30 seconds', attempts = attempts + 1
WHERE id = ANY (ARRAY(SELECT id FROM jobs_samesql WHERE run_at <= now() AND attempts < 5
                      ORDER BY priority, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED))
RETURNING id, lease_token \gset
DELETE FROM jobs_samesql WHERE id = :id AND (lease_token = :lease_token) IS TRUE;
