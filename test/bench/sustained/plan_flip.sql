-- make bench-sustained: a regression check for the claim's plan after ANALYZE of a nearly empty queue. A busy queue
-- is often almost empty; when autovacuum's ANALYZE (or VACUUM, which also updates reltuples) sees it so, the claim's
-- cached generic plan is made again for a table of a few rows over hundreds of pages. Made with sequential scans and
-- sorts allowed, it became a sequential scan with a sort; the heap then does not grow when the backlog comes back
-- (new jobs reuse the space vacuum freed), so ck's own re-plan on growth does not fire, and every claim sorted the
-- whole backlog until the next ANALYZE (39-52 ms per claim). ck now makes that plan with them off: about 0.1-0.4 ms.
-- Run: psql -v ON_ERROR_STOP=1 -f plan_flip.sql (needs concurrency_kit; makes and drops queue plan_flip).
\set ECHO none
SELECT to_regclass('plan_flip') IS NOT NULL AS left_over \gset
\if :left_over
SELECT ck.drop_queue('plan_flip') IS NULL AS dropped \gset
\endif
SELECT ck.create_queue('plan_flip') IS NOT NULL AS made \gset
ALTER TABLE plan_flip SET (autovacuum_enabled = false);

CREATE OR REPLACE FUNCTION pg_temp.claim_ms() RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM ck.complete('plan_flip', c.id, c.lease_token) FROM ck.claim('plan_flip') AS c;
    RETURN round(extract(epoch FROM clock_timestamp() - t0)::numeric * 1000, 3);
END
$$;

-- a queue as the sustained run leaves it: 40,000 jobs' worth of heap, 8 left, freshly vacuumed and analyzed
TRUNCATE plan_flip;
INSERT INTO plan_flip (payload) SELECT '{"n": 0}' FROM generate_series(1, 40000);
DELETE FROM plan_flip WHERE id % 5000 <> 0;
VACUUM ANALYZE plan_flip;
SELECT relpages AS heap_pages, reltuples AS planner_rows FROM pg_class WHERE relname = 'plan_flip' \gset
\echo after VACUUM ANALYZE: :heap_pages heap pages, :planner_rows rows
-- the claim is planned now (this backend's first claim of the queue), with those statistics
SELECT pg_temp.claim_ms() AS first_claim_ms \gset
-- the backlog comes back: 40,000 jobs into the space vacuum freed
INSERT INTO plan_flip (payload) SELECT '{"n": 0}' FROM generate_series(1, 40000);
SELECT relpages AS heap_pages FROM pg_class WHERE relname = 'plan_flip' \gset
SELECT pg_size_pretty(pg_relation_size('plan_flip')) AS heap_size \gset
SELECT round(avg(ms), 3) AS ms FROM (SELECT pg_temp.claim_ms() AS ms FROM generate_series(1, 20)) AS s \gset
\echo claims on a backlog of 40,000 with that plan, mean of 20: :ms ms (heap :heap_size)
SELECT ck.drop_queue('plan_flip') IS NULL AS dropped \gset
