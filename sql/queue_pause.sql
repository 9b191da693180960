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
-- queue; one key is not supported yet (0A000).
SELECT test.outcome($$SELECT ck.pause_queue(NULL)$$);
SELECT test.outcome($$SELECT ck.resume_queue(NULL)$$);
SELECT test.outcome($$SELECT ck.pause_queue('pg_class')$$);
SELECT test.outcome($$SELECT ck.resume_queue('pg_class')$$);
SELECT test.outcome($$SELECT ck.pause_queue(0)$$);
SELECT test.outcome($$SELECT ck.pause_queue('pq', 'tenant:1')$$);
SELECT test.outcome($$SELECT ck.resume_queue('pq', 'tenant:1')$$);
SELECT test.outcome($$SELECT ck.pause_queue('pq', NULL)$$) AS whole_queue;
CREATE ROLE regress_ck_pause_worker;
GRANT SELECT, UPDATE, DELETE ON pq TO regress_ck_pause_worker;
CREATE ROLE regress_ck_pause_nobody;
GRANT USAGE ON SCHEMA test TO regress_ck_pause_worker, regress_ck_pause_nobody;
SET ROLE regress_ck_pause_worker;
SELECT test.outcome($$SELECT ck.resume_queue('pq')$$);
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

-- Labels: the contract of each.
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel, p.prosecdef, p.proconfig
FROM pg_proc AS p WHERE p.oid IN ('ck.pause_queue(regclass, text)'::regprocedure, 'ck.resume_queue(regclass, text)'::regprocedure,
                                  'ck.queue_stats(regclass)'::regprocedure)
ORDER BY 1::text;
SELECT ck.drop_queue('pq');
