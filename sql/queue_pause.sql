-- Pause and resume (1.1.0, issue 47): a paused queue's claims return nothing, claim_wait sleeps,
-- everything else goes on; the state is ck.queues.paused_at. The races (a pause against claims
-- in flight, a resume against claim_wait) are test/specs/queue_pause_race.spec.
SELECT ck.create_queue('pq', lease => '1 hour') IS NOT NULL AS created;
SELECT ck.enqueue('pq', '{"n": 1}') AS j1, ck.enqueue('pq', '{"n": 2}', priority => -1) AS j2,
       ck.enqueue('pq', '{"n": 3}') AS j3 \gset
-- A job running when the pause comes finishes: its acknowledgements work as before.
SELECT id AS running, lease_token AS running_token FROM ck.claim('pq') \gset
SELECT :running = :j2 AS first_by_priority;

SELECT ck.pause_queue('pq') AS paused, ck.pause_queue('pq') AS paused_again;
SELECT paused_at IS NOT NULL AS recorded FROM ck.queues WHERE queue = 'pq'::regclass;
SELECT ready, running, paused FROM ck.queue_stats('pq');
-- Claims of every kind return nothing and change nothing.
SELECT count(*) AS claimed FROM ck.claim('pq', 10);
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS claimed_waiting FROM ck.claim_wait('pq', 10, max_wait => '200 ms');
SELECT clock_timestamp() - :'t0'::timestamptz >= interval '190 ms' AS slept_its_max_wait;
SELECT ck.extend_lease('pq', :running, :running_token, '2 hours') > now() AS extended;
SELECT count(*) AS claimed_after_complete FROM ck.complete_and_claim('pq', :running, :running_token, 10);
SELECT count(*) AS left_in_queue, count(*) FILTER (WHERE lease_token IS NOT NULL) AS leased, max(attempts) AS attempts FROM pq;
-- Under REPEATABLE READ too (the settings are read with the latest snapshot, not the transaction's).
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) AS claimed_repeatable_read FROM ck.claim('pq', 10);
COMMIT;
-- Producers go on.
SELECT ck.enqueue('pq', '{"n": 4}', priority => -2) AS j4 \gset
-- The state is in the table, not in this session: a new session finds the queue paused.
\c
SELECT count(*) AS claimed_in_new_session FROM ck.claim('pq', 10);

-- Resumed: the jobs come in their order (priority, run_at, id), nothing skipped.
SELECT ck.resume_queue('pq') AS resumed, ck.resume_queue('pq') AS resumed_again;
SELECT paused FROM ck.queue_stats('pq');
SELECT array_agg(payload->>'n' ORDER BY priority, id) AS order_expected FROM pq;
SELECT array_agg(payload->>'n') AS claimed_in_order FROM ck.claim('pq', 10);

-- A pause rolled back pauses nothing; one in a prepared transaction is refused.
BEGIN;
SELECT ck.pause_queue('pq');
ROLLBACK;
SELECT paused FROM ck.queue_stats('pq');
BEGIN;
SELECT ck.pause_queue('pq');
PREPARE TRANSACTION 'pq_pause';
SELECT paused FROM ck.queue_stats('pq');
-- Claims in the pausing transaction itself see the pause.
BEGIN;
SELECT ck.enqueue('pq', '{"n": 5}') IS NOT NULL AS enqueued;
SELECT ck.pause_queue('pq');
SELECT count(*) AS claimed_by_pauser FROM ck.claim('pq');
COMMIT;
SELECT ck.resume_queue('pq');

-- Bad input, and only the queue's owner pauses or resumes. A NULL concurrency_key is the whole
-- queue; a key that is not paused is not resumed (false).
SELECT test.outcome($$SELECT ck.pause_queue(NULL)$$);
SELECT test.outcome($$SELECT ck.resume_queue(NULL)$$);
SELECT test.outcome($$SELECT ck.pause_queue(NULL, 'tenant:1')$$);
SELECT test.outcome($$SELECT ck.pause_queue('pg_class')$$);
SELECT test.outcome($$SELECT ck.resume_queue('pg_class')$$);
SELECT test.outcome($$SELECT ck.pause_queue('pg_class', 'tenant:1')$$);
SELECT test.outcome($$SELECT ck.pause_queue(0)$$);
SELECT test.outcome($$SELECT ck.resume_queue('pq', 'tenant:1')$$) AS unknown_key;
SELECT test.outcome($$SELECT ck.pause_queue('pq', NULL)$$) AS whole_queue;
CREATE ROLE regress_ck_pause_worker;
GRANT SELECT, UPDATE, DELETE ON pq TO regress_ck_pause_worker;
CREATE ROLE regress_ck_pause_nobody;
GRANT USAGE ON SCHEMA test TO regress_ck_pause_worker, regress_ck_pause_nobody;
SET ROLE regress_ck_pause_worker;
SELECT test.outcome($$SELECT ck.resume_queue('pq')$$);
SELECT test.outcome($$SELECT ck.pause_queue('pq', 'tenant:1')$$) AS worker_pauses_key;
-- Nor by writing the table: a worker may lock a paused key's row (its claims do), not change it.
SELECT test.outcome($$INSERT INTO ck.paused_keys VALUES ('pq', 'tenant:1')$$) AS worker_inserts;
-- A worker's claims of a paused queue return nothing; a role that may not claim is told so.
SELECT count(*) AS worker_claimed FROM ck.claim('pq');
SET ROLE regress_ck_pause_nobody;
SELECT test.outcome($$SELECT * FROM ck.claim('pq')$$);
RESET ROLE;
SELECT ck.resume_queue('pq');
SET ROLE regress_ck_pause_worker;
SELECT count(*) AS worker_claimed_after_resume FROM ck.claim('pq');
SET ROLE regress_ck_pause_nobody;
SELECT test.outcome($$SELECT * FROM ck.claim('pq')$$);
RESET ROLE;
REVOKE ALL ON pq FROM regress_ck_pause_worker;
REVOKE USAGE ON SCHEMA test FROM regress_ck_pause_worker, regress_ck_pause_nobody;
DROP ROLE regress_ck_pause_worker;
DROP ROLE regress_ck_pause_nobody;

-- One concurrency key (ck.pause_queue(queue, key), its row in ck.paused_keys): the key's claims
-- return nothing, the other keys' go on; its jobs wait parked and come back in their order.
SELECT ck.create_queue('pk', lease => '1 hour') IS NOT NULL AS created;
SELECT count(ck.enqueue('pk', jsonb_build_object('n', i), concurrency_key => CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END))
FROM generate_series(1, 8) AS i;   -- b: 1 3 5 7, a: 2 4 6 8
-- Leased when the pause comes: 1 (finishes), 3 (its lease runs out), 5 (fails and is retried).
SELECT id AS r1, lease_token AS t1 FROM ck.claim('pk') \gset
SELECT id AS r2 FROM ck.claim('pk') \gset
SELECT id AS r3 FROM ck.claim('pk', 1, '1 ms') \gset
SELECT id AS r4 FROM ck.claim('pk') \gset
SELECT id AS r5, lease_token AS t5 FROM ck.claim('pk') \gset
SELECT ARRAY[:r1, :r2, :r3, :r4, :r5] AS leased;
SELECT ck.pause_queue('pk', 'b') AS paused, ck.pause_queue('pk', 'b') AS paused_again;
SELECT queue, concurrency_key, paused_at IS NOT NULL AS since FROM ck.paused_keys;
-- The queue itself is not paused (queue_stats shows the whole queue's pause only).
SELECT paused FROM ck.queue_stats('pk');
SELECT id, run_at = 'infinity' AS parked, lease_token IS NOT NULL AS leased FROM pk WHERE concurrency_key = 'b' ORDER BY id;
SELECT ck.complete('pk', :r1, :t1) AS running_job_completed;
SELECT ck.fail('pk', :r5, :t5, 'boom', retry_in => '0') AS failed;
SELECT pg_sleep(0.1);
-- Only key a's ready jobs are claimed; the claims park the jobs of b they met (3's lease ran out, 5
-- was retried), their attempts not counted.
SELECT array_agg(payload->>'n' ORDER BY id) AS claimed FROM ck.claim('pk', 10);
SELECT count(*) AS claimed_waiting FROM ck.claim_wait('pk', 10, max_wait => '100 ms');
SELECT id, run_at = 'infinity' AS parked, lease_token IS NULL AS unleased, attempts FROM pk WHERE concurrency_key = 'b' ORDER BY id;
-- Jobs of the key enqueued while it is paused wait parked, by ck.enqueue or a plain INSERT.
SELECT ck.enqueue('pk', '{"n": 9}', concurrency_key => 'b') AS j9 \gset
INSERT INTO pk (payload, concurrency_key) VALUES ('{"n": 10}', 'b');
SELECT count(*) FILTER (WHERE run_at = 'infinity') AS parked, count(*) AS jobs FROM pk WHERE concurrency_key = 'b';
-- A limit set while the key is paused is kept for the resume; the key stays paused.
SELECT ck.set_concurrency_limit('pk', 'b', 2);
SELECT ck.set_concurrency_limit('pk', NULL, 5);
SELECT count(*) AS claimed_after_limits FROM ck.claim('pk', 10);
SELECT concurrency_key, free FROM ck.concurrency_slots WHERE queue = 'pk'::regclass ORDER BY 1;
-- The state is in the tables: a new session finds the key paused.
\c
SELECT count(*) AS claimed_in_new_session FROM ck.claim('pk', 10);
-- Resumed under its limit of 2: its first jobs in their order (priority, run_at, id, as before
-- the pause: 7 was enqueued, 3's lease and 5's retry came later), the others as slots free.
SELECT ck.resume_queue('pk', 'b') AS resumed, ck.resume_queue('pk', 'b') AS resumed_again;
SELECT count(*) AS paused_keys FROM ck.paused_keys;
SELECT array_agg(payload->>'n') AS claimed_in_order FROM ck.claim('pk', 10);
SELECT concurrency_key, free FROM ck.concurrency_slots WHERE queue = 'pk'::regclass ORDER BY 1;
SELECT count(*) FILTER (WHERE run_at = 'infinity') AS still_parked FROM pk WHERE concurrency_key = 'b';
-- A key without a limit: resumed, all its jobs come back, in their order, and its slot row goes.
SELECT ck.set_concurrency_limit('pk', NULL, NULL);
SELECT count(ck.enqueue('pk', jsonb_build_object('n', i), concurrency_key => 'c')) FROM generate_series(11, 13) AS i;
SELECT ck.pause_queue('pk', 'c') AS paused_c;
SELECT ck.enqueue('pk', '{"n": 14}', concurrency_key => 'c') IS NOT NULL AS enqueued;
SELECT count(*) FILTER (WHERE run_at = 'infinity') AS parked_c FROM pk WHERE concurrency_key = 'c';
-- A resume rolled back resumes nothing.
BEGIN;
SELECT ck.resume_queue('pk', 'c') AS resumed_c;
ROLLBACK;
SELECT count(*) AS claimed_after_rollback FROM ck.claim('pk', 10);
SELECT ck.resume_queue('pk', 'c') AS resumed_c;
SELECT count(*) AS slot_rows_c FROM ck.concurrency_slots WHERE queue = 'pk'::regclass AND concurrency_key = 'c';
SELECT array_agg(payload->>'n') AS claimed_c_in_order FROM ck.claim('pk', 10);
-- A paused key with a limit: every path that hands a slot on or readies a job leaves its jobs
-- parked (a completion, a cancel, a burial, a dependency completed, a dead letter revived), and
-- the resume brings back as many as the limit has room for, in their order.
SELECT ck.create_queue('pl', lease => '1 hour', max_attempts => 1) IS NOT NULL AS created;
SELECT ck.set_concurrency_limit('pl', 'b', 3);
SELECT count(ck.enqueue('pl', jsonb_build_object('n', i), concurrency_key => 'b')) FROM generate_series(1, 6) AS i;
SELECT id AS l1, lease_token AS lt1 FROM ck.claim('pl') \gset
SELECT id AS l2 FROM ck.claim('pl') \gset
SELECT id AS l3 FROM ck.claim('pl', 1, '1 ms') \gset
SELECT ck.enqueue('pl', '{"n": "first"}') AS x \gset
SELECT ck.enqueue('pl', '{"n": "after"}', concurrency_key => 'b', after => ARRAY[:x]) AS y \gset
SELECT ck.pause_queue('pl', 'b') AS paused;
SELECT free FROM ck.concurrency_slots WHERE queue = 'pl'::regclass;
SELECT ck.complete('pl', :l1, :lt1) AS completed;
SELECT ck.cancel('pl', :l2) AS cancelled;
SELECT pg_sleep(0.05);
-- This claim buries 3 (its lease ran out on its last attempt) and takes the job without a key.
SELECT id, lease_token AS xt FROM ck.claim('pl', 10) \gset
SELECT :id = :x AS claimed_the_job_without_a_key;
SELECT count(*) AS buried_job_still_queued FROM pl WHERE id = :l3;
SELECT ck.complete('pl', :x, :xt) AS dependency_completed;
SELECT ck.retry_dead('pl', :l2) AS revived;
SELECT count(*) FILTER (WHERE run_at = 'infinity') AS parked, count(*) FILTER (WHERE run_at <> 'infinity') AS not_parked
FROM pl WHERE concurrency_key = 'b';
SELECT count(*) AS claimed FROM ck.claim('pl', 10);
SELECT ck.resume_queue('pl', 'b') AS resumed;
SELECT free FROM ck.concurrency_slots WHERE queue = 'pl'::regclass;
SELECT array_agg(payload->>'n') AS claimed_in_order FROM ck.claim('pl', 10);
SELECT ck.drop_queue('pl');

-- A worker needs no more rights than to claim (SELECT, UPDATE on the queue): its claim parks a job
-- of a paused key it meets (locking the key's row of ck.paused_keys, which it cannot change).
SELECT ck.create_queue('pw', lease => '1 hour') IS NOT NULL AS created;
SELECT ck.enqueue('pw', '{}', concurrency_key => 'b') IS NOT NULL AS enqueued;
SELECT count(*) AS leased_1ms FROM ck.claim('pw', 1, '1 ms');
SELECT ck.pause_queue('pw', 'b') AS paused;
SELECT pg_sleep(0.01);
CREATE ROLE regress_ck_key_worker;
GRANT SELECT, UPDATE ON pw TO regress_ck_key_worker;
GRANT USAGE ON SCHEMA test TO regress_ck_key_worker;
SET ROLE regress_ck_key_worker;
SELECT count(*) AS worker_claimed FROM ck.claim('pw');
SELECT test.outcome($$UPDATE ck.paused_keys SET paused_at = now()$$) AS worker_updates;
SELECT test.outcome($$DELETE FROM ck.paused_keys$$) AS worker_deletes_nothing;
RESET ROLE;
SELECT run_at = 'infinity' AS parked, lease_token IS NULL AS unleased FROM pw;
SELECT count(*) AS still_paused FROM ck.paused_keys WHERE queue = 'pw'::regclass;
REVOKE ALL ON pw FROM regress_ck_key_worker;
REVOKE USAGE ON SCHEMA test FROM regress_ck_key_worker;
DROP ROLE regress_ck_key_worker;
SELECT ck.drop_queue('pw');

-- Many keys of a queue paused in one transaction wait for its claims once.
BEGIN;
SELECT count(*) FILTER (WHERE ck.pause_queue('pk', 'k' || i)) AS paused_keys FROM generate_series(1, 20) AS i;
SELECT count(*) FILTER (WHERE ck.resume_queue('pk', 'k' || i)) AS resumed_keys FROM generate_series(1, 20) AS i;
COMMIT;
-- A queue's paused keys go with it.
SELECT ck.pause_queue('pk', 'd') AS paused_d;
SELECT ck.drop_queue('pk');
SELECT count(*) AS paused_keys_left FROM ck.paused_keys;

-- Labels: the contract of each.
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel, p.prosecdef, p.proconfig
FROM pg_proc AS p WHERE p.oid IN ('ck.pause_queue(regclass, text)'::regprocedure, 'ck.resume_queue(regclass, text)'::regprocedure,
                                  'ck.queue_stats(regclass)'::regprocedure)
ORDER BY 1::text;
SELECT ck.drop_queue('pq');
