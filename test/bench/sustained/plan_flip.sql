-- make bench-sustained: why ck's queue slowed down in the sustained run, reproduced. A busy queue is often almost
-- empty; when autovacuum's ANALYZE (or VACUUM, which also updates reltuples) sees it so, the claim's cached generic
-- plan is made again for a table of a few rows over hundreds of pages, and becomes a sequential scan with a sort.
-- The heap then does not grow when the backlog comes back (new jobs reuse the space vacuum freed), so ck's own
-- re-plan on growth does not fire, and every claim sorts the whole backlog until the next ANALYZE.
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

-- The same, with the claim planned while sequential scans and sorts are off (what the fix does): a new session's
-- plan, since plans are per backend.
\c
SET enable_seqscan = off;
SET enable_sort = off;
SET enable_bitmapscan = off;
CREATE OR REPLACE FUNCTION pg_temp.claim_ms() RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM ck.complete('plan_flip', c.id, c.lease_token) FROM ck.claim('plan_flip') AS c;
    RETURN round(extract(epoch FROM clock_timestamp() - t0)::numeric * 1000, 3);
END
$$;
TRUNCATE plan_flip;
INSERT INTO plan_flip (payload) SELECT '{"n": 0}' FROM generate_series(1, 40000);
DELETE FROM plan_flip WHERE id % 5000 <> 0;
VACUUM ANALYZE plan_flip;
SELECT pg_temp.claim_ms() AS first_claim_ms \gset
INSERT INTO plan_flip (payload) SELECT '{"n": 0}' FROM generate_series(1, 40000);
SELECT round(avg(ms), 3) AS ms FROM (SELECT pg_temp.claim_ms() AS ms FROM generate_series(1, 20)) AS s \gset
\echo the same, planned with enable_seqscan, enable_sort and enable_bitmapscan off: :ms ms
SELECT ck.drop_queue('plan_flip') IS NULL AS dropped \gset
