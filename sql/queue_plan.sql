-- The claim's and the burial's plans do not depend on what the last ANALYZE saw. A queue that
-- was analyzed while nearly empty, its table still large from the jobs done before (as
-- autovacuum finds a busy queue kept up with), is estimated to hold one row; plans made then
-- once read the whole table at every claim. Each call below must read a few pages, not the
-- hundreds its queue's table and indexes have.
CREATE FUNCTION pg_temp.pages_read(queue regclass) RETURNS bigint
LANGUAGE sql AS $$
    SELECT pg_stat_get_xact_blocks_fetched(queue)
           + (SELECT coalesce(sum(pg_stat_get_xact_blocks_fetched(indexrelid)), 0) FROM pg_index WHERE indrelid = queue)
$$;

SELECT ck.create_queue('stale_q', max_attempts => 1) IS NOT NULL AS created;
ALTER TABLE stale_q SET (autovacuum_enabled = off);
INSERT INTO stale_q (payload) SELECT '{}' FROM generate_series(1, 50000);
DELETE FROM stale_q WHERE id < 50000;
VACUUM ANALYZE stale_q;
SELECT reltuples <= 1 AS analyzed_nearly_empty, relpages > 300 AS still_large FROM pg_class WHERE oid = 'stale_q'::regclass;
INSERT INTO stale_q (payload) SELECT '{}' FROM generate_series(1, 50000);

-- The claim from the frontier, one job.
BEGIN;
SELECT pg_temp.pages_read('stale_q') AS before \gset
SELECT count(*) AS claimed FROM ck.claim('stale_q', 1);
SELECT pg_temp.pages_read('stale_q') - :before < 60 AS few_pages;
COMMIT;
-- Ten jobs.
BEGIN;
SELECT pg_temp.pages_read('stale_q') AS before \gset
SELECT count(*) AS claimed FROM ck.claim('stale_q', 10);
SELECT pg_temp.pages_read('stale_q') - :before < 250 AS few_pages;
COMMIT;
-- The full claim (REPEATABLE READ reads the whole claim index, here with no dead entries).
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.pages_read('stale_q') AS before \gset
SELECT count(*) AS claimed FROM ck.claim('stale_q', 1);
SELECT pg_temp.pages_read('stale_q') - :before < 60 AS few_pages;
COMMIT;

-- The burial: five leases run out on the last attempt, every other job is due in an hour, so
-- the next claim comes back empty and buries the five.
UPDATE stale_q SET run_at = now() + interval '1 hour';
SELECT count(*) AS due FROM ck.claim('stale_q', 1);
INSERT INTO stale_q (payload) SELECT '{}' FROM generate_series(1, 5);
SELECT count(*) AS claimed FROM ck.claim('stale_q', 5, lease => '1 millisecond');
SELECT pg_sleep(0.01);
BEGIN;
SELECT pg_temp.pages_read('stale_q') AS before \gset
SELECT count(*) AS claimed FROM ck.claim('stale_q', 1);
SELECT pg_temp.pages_read('stale_q') - :before < 100 AS few_pages;
COMMIT;
SELECT count(*) AS buried FROM stale_q_dead;

SELECT ck.drop_queue('stale_q');

-- The acknowledgements find their job by id too: complete_many joins its pairs (planned as the
-- claim is), the others take one id.
SELECT ck.create_queue('stale_ack') IS NOT NULL AS created;
ALTER TABLE stale_ack SET (autovacuum_enabled = off);
INSERT INTO stale_ack (payload) SELECT '{}' FROM generate_series(1, 50000);
DELETE FROM stale_ack WHERE id < 50000;
VACUUM ANALYZE stale_ack;
INSERT INTO stale_ack (payload) SELECT '{}' FROM generate_series(1, 50000);
CREATE TEMP TABLE leases AS SELECT id, lease_token FROM ck.claim('stale_ack', 6);
BEGIN;
SELECT pg_temp.pages_read('stale_ack') AS before \gset
SELECT count(*) AS completed FROM ck.complete_many('stale_ack',
    ARRAY(SELECT id FROM leases ORDER BY id LIMIT 2), ARRAY(SELECT lease_token FROM leases ORDER BY id LIMIT 2));
SELECT pg_temp.pages_read('stale_ack') - :before < 60 AS few_pages;
COMMIT;
CREATE FUNCTION pg_temp.ack_pages(call text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    before bigint := pg_temp.pages_read('stale_ack');
BEGIN
    EXECUTE call;
    RETURN pg_temp.pages_read('stale_ack') - before < 40;
END $$;
SELECT pg_temp.ack_pages(format('SELECT ck.try_complete(%L, %s, %s)', 'stale_ack', id, lease_token)) AS complete_few_pages
FROM leases ORDER BY id OFFSET 2 LIMIT 1;
SELECT pg_temp.ack_pages(format('SELECT ck.try_extend_lease(%L, %s, %s, %L)', 'stale_ack', id, lease_token, '1 minute'))
    AS extend_few_pages
FROM leases ORDER BY id OFFSET 3 LIMIT 1;
SELECT pg_temp.ack_pages(format('SELECT ck.try_fail(%L, %s, %s, %L)', 'stale_ack', id, lease_token, 'retry')) AS fail_few_pages
FROM leases ORDER BY id OFFSET 4 LIMIT 1;
SELECT ck.drop_queue('stale_ack');
