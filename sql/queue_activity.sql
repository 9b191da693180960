-- ck.queue_activity: counters per queue since the shared state appeared (make test runs the suite
-- with the library preloaded and without). What a transaction did counts when it commits; a lost acknowledgement
-- and a refused duplicate count at once, whatever happens to their transaction.
SELECT ck.create_queue('act') IS NOT NULL AS created, ck.create_queue('act_once', max_attempts => 1) IS NOT NULL AS created;
CREATE FUNCTION pg_temp.activity(q regclass) RETURNS TABLE (enqueued bigint, claimed bigint, completed bigint,
    failed bigint, retried bigint, buried bigint, cancelled bigint, lost_acks bigint, duplicates bigint)
LANGUAGE sql AS $$
    SELECT enqueued, claimed, completed, failed, retried, buried, cancelled, lost_acks, duplicates
    FROM ck.queue_activity() WHERE queue = q
$$;
SELECT * FROM pg_temp.activity('act');

-- Enqueued: ck.enqueue, a plain INSERT (two rows), a unique key once; the duplicate counts as one.
SELECT ck.enqueue('act') > 0 AS enqueued;
INSERT INTO act (payload) VALUES ('{}'), ('{}');
SELECT ck.enqueue('act', unique_key => 'k') = ck.enqueue('act', unique_key => 'k') AS same_job;
SELECT enqueued, duplicates FROM pg_temp.activity('act');

-- A rolled-back enqueue and claim count nothing; a rolled-back subtransaction neither.
BEGIN;
SELECT ck.enqueue('act') > 0 AS enqueued;
SELECT count(*) AS claimed FROM ck.claim('act', 2);
ROLLBACK;
BEGIN;
SAVEPOINT s;
SELECT ck.enqueue('act') > 0 AS enqueued;
ROLLBACK TO SAVEPOINT s;
SAVEPOINT t;
SELECT ck.enqueue('act') > 0 AS enqueued_and_kept;
RELEASE SAVEPOINT t;
COMMIT;
SELECT enqueued, claimed FROM pg_temp.activity('act');

-- Claimed, completed, failed and retried, cancelled (a running job), lost acknowledgements.
CREATE TEMP TABLE leased AS SELECT id, lease_token, row_number() OVER (ORDER BY id) AS n FROM ck.claim('act', 4);
SELECT ck.complete('act', id, lease_token) FROM leased WHERE n = 1;
SELECT ck.try_complete('act', id, lease_token) AS again FROM leased WHERE n = 1;
SELECT ck.fail('act', id, lease_token, 'boom') FROM leased WHERE n = 2;
SELECT ck.cancel('act', id) FROM leased WHERE n = 3;
SELECT ck.try_extend_lease('act', id, lease_token, '1 minute') AS extended FROM leased WHERE n = 3;
SELECT ck.try_complete_many('act', ARRAY[id, id], ARRAY[lease_token, lease_token + 1]) FROM leased WHERE n = 4;
SELECT * FROM pg_temp.activity('act');
-- The raising forms count their lost leases too: one each, and two pairs of complete_many.
SELECT left(test.outcome(s), 5) AS raised FROM leased AS l, LATERAL (VALUES
    (format('SELECT ck.complete(%L, %s, %s)', 'act', l.id, l.lease_token)),
    (format('SELECT ck.fail(%L, %s, %s)', 'act', l.id, l.lease_token)),
    (format('SELECT ck.extend_lease(%L, %s, %s, %L)', 'act', l.id, l.lease_token, '1 minute')),
    (format('SELECT ck.complete_many(%L, %L, %L)', 'act', ARRAY[l.id, l.id], ARRAY[l.lease_token, l.lease_token]))) AS c(s)
WHERE l.n = 1;
SELECT lost_acks FROM pg_temp.activity('act');

-- A lost acknowledgement counts even when its transaction rolls back (ck.complete_and_claim
-- raises CK005 for it, which rolls everything back).
BEGIN;
SELECT ck.try_complete('act', id, lease_token) AS lost_in_a_rollback FROM leased WHERE n = 1;
ROLLBACK;
DO $$
BEGIN
    PERFORM ck.complete_and_claim('act', id, lease_token) FROM leased WHERE n = 1;
EXCEPTION WHEN SQLSTATE 'CK005' THEN
    RAISE NOTICE 'CK005';
END
$$;
SELECT lost_acks, completed FROM pg_temp.activity('act');

-- Buried: ck.fail on the last attempt, and an expired last attempt buried by a claim.
SELECT ck.enqueue('act_once') > 0 AS a, ck.enqueue('act_once') > 0 AS b;
CREATE TEMP TABLE once AS SELECT id, lease_token FROM ck.claim('act_once', 1, '1 hour');
SELECT count(*) AS claimed_for_1_ms FROM ck.claim('act_once', 1, '1 ms');
SELECT pg_sleep(0.01);
SELECT count(*) AS claimed_none_buried_one FROM ck.claim('act_once', 1);
SELECT ck.fail('act_once', id, lease_token) FROM once;
SELECT * FROM pg_temp.activity('act_once');

-- The counters of a dropped queue are not shown; since is when the queue was first counted.
SELECT since <= now() AS since_in_the_past FROM ck.queue_activity() WHERE queue = 'act'::regclass;
CREATE TEMP TABLE act_once_oid AS SELECT 'act_once'::regclass::oid AS oid;
DROP TABLE act_once;
SELECT count(*) AS rows_of_act_once FROM ck.queue_activity() AS a, act_once_oid AS d WHERE a.queue::oid = d.oid;
SELECT count(*) AS rows_of_act FROM ck.queue_activity() AS a WHERE a.queue::text = 'act';
