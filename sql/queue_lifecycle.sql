-- Queues with leases: creation, claim order, fenced acknowledgements, retries, dead
-- letters, stats, and bad input.
SELECT ck.create_queue('jobs', lease => '30 seconds', max_attempts => 2);
SELECT queue, dead_letters, lease, max_attempts, notify FROM ck.queues;
SELECT column_name, data_type, column_default IS NOT NULL AS has_default
FROM information_schema.columns WHERE table_name = 'jobs' ORDER BY ordinal_position;
SELECT indexdef FROM pg_indexes WHERE tablename IN ('jobs', 'jobs_dead') ORDER BY indexdef;

-- enqueue, or plain INSERT; claim takes by priority, then run_at, then id
SELECT ck.enqueue('jobs', '{"n": 1}');
SELECT ck.enqueue('jobs', '{"n": 2}', priority => -5);
SELECT ck.enqueue('jobs', '{"n": 3}', run_at => now() + interval '1 hour');
INSERT INTO jobs (payload) VALUES ('{"n": 4}');
SELECT ready, scheduled, running, expired, dead, oldest_ready_age >= '0', ready_estimated
FROM ck.queue_stats('jobs');
SELECT payload, attempts, lease_token > 0 AS has_token, lease_until > now() AS leased
FROM ck.claim('jobs', 10) ORDER BY id;
SELECT count(*) AS nothing_left_to_claim FROM ck.claim('jobs');
SELECT ready, scheduled, running, expired, dead FROM ck.queue_stats('jobs');

-- fenced acknowledgements: the current token completes once; an old token never does. The
-- plain forms raise CK005 (naming queue, job and token) when the lease is lost, the try_ forms
-- return false / NULL
CREATE TEMP TABLE claimed AS SELECT * FROM ck.claim('jobs');
TRUNCATE jobs;
SELECT ck.enqueue('jobs', '{"n": 5}') AS job5 \gset
CREATE TEMP TABLE first AS SELECT * FROM ck.claim('jobs');
SELECT test.outcome(format('SELECT ck.complete(%L, %s, %s)', 'jobs', id, lease_token + 1)) AS wrong_token FROM first;
SELECT ck.try_complete('jobs', id, lease_token + 1) AS try_wrong_token FROM first;
SELECT ck.extend_lease('jobs', id, lease_token, '1 minute') > now() + interval '50 seconds' AS extended FROM first;
-- the lease runs out and another worker claims the job again
UPDATE jobs SET run_at = now() - interval '1 second';
CREATE TEMP TABLE second AS SELECT * FROM ck.claim('jobs');
SELECT s.attempts, s.lease_token <> f.lease_token AS new_token FROM first f, second s;
SELECT ck.try_complete('jobs', id, lease_token) AS stale_complete FROM first;
SELECT ck.try_fail('jobs', id, lease_token, 'stale') AS stale_fail FROM first;
SELECT ck.try_extend_lease('jobs', id, lease_token, '1 minute') AS stale_extend FROM first;
SELECT test.outcome(format('SELECT ck.complete(%L, %s, %s)', 'jobs', id, lease_token)) AS raised FROM first
UNION ALL SELECT test.outcome(format('SELECT ck.fail(%L, %s, %s, %L)', 'jobs', id, lease_token, 'stale')) FROM first
UNION ALL SELECT test.outcome(format('SELECT ck.extend_lease(%L, %s, %s, %L)', 'jobs', id, lease_token, '1 minute')) FROM first;
-- the HINT names the try_ form
DO $$
BEGIN
    PERFORM ck.complete('jobs', id, lease_token) FROM first;
EXCEPTION WHEN SQLSTATE 'CK005' THEN
    DECLARE hint text;
    BEGIN
        GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
        RAISE NOTICE 'hint: %', hint;
    END;
END
$$;
SELECT attempts, lease_token = (SELECT lease_token FROM second) AS still_second_workers FROM jobs;
SELECT ck.complete('jobs', id, lease_token) AS complete FROM second;
SELECT ck.try_complete('jobs', id, lease_token) AS complete_twice FROM second;
SELECT count(*) AS jobs_left FROM jobs;

-- complete_many: a batch acknowledged in one statement. With a pair whose token is not current
-- it raises CK005 naming that pair and completes nothing; try_complete_many leaves that pair
-- alone, and the ids it returns are exactly the jobs done
INSERT INTO jobs (payload) SELECT jsonb_build_object('n', g) FROM generate_series(6, 8) AS g;
CREATE TEMP TABLE batch AS SELECT * FROM ck.claim('jobs', 3);
SELECT test.outcome(format('SELECT * FROM ck.complete_many(%L, %L, %L)', 'jobs',
    ARRAY(SELECT id FROM batch ORDER BY id),
    ARRAY(SELECT CASE WHEN payload->>'n' = '7' THEN lease_token + 1 ELSE lease_token END FROM batch ORDER BY id)))
    ~ '^CK005: lease lost: job \d+ of queue public.jobs \(Lease token \d+ ' AS raised;
SELECT count(*) AS nothing_completed FROM jobs;
SELECT b.payload AS done FROM ck.try_complete_many('jobs',
    ARRAY(SELECT id FROM batch ORDER BY id),
    ARRAY(SELECT CASE WHEN payload->>'n' = '7' THEN lease_token + 1 ELSE lease_token END FROM batch ORDER BY id)
) AS c(id) JOIN batch AS b USING (id) ORDER BY b.payload->>'n';
SELECT payload AS still_leased, lease_token = (SELECT lease_token FROM batch WHERE payload->>'n' = '7') AS same_token
FROM jobs;
SELECT count(*) AS done_again FROM ck.try_complete_many('jobs', ARRAY(SELECT id FROM batch), ARRAY(SELECT lease_token FROM batch));
SELECT count(*) AS empty_batch FROM ck.complete_many('jobs', '{}', '{}');
-- every pair held: complete_many returns every id
INSERT INTO jobs (payload) SELECT jsonb_build_object('n', g) FROM generate_series(9, 10) AS g;
CREATE TEMP TABLE held AS SELECT * FROM ck.claim('jobs', 2);
SELECT array_agg(c.id ORDER BY c.id) = (SELECT array_agg(id ORDER BY id) FROM held) AS every_id
FROM ck.complete_many('jobs', ARRAY(SELECT id FROM held), ARRAY(SELECT lease_token FROM held)) AS c(id);
SELECT count(*) AS jobs_left FROM jobs;
TRUNCATE jobs;

-- complete_and_claim: the worker's loop in one call; each call completes the job held and
-- claims the next (up to batch), and the last one finds the queue empty
INSERT INTO jobs (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, 3) AS g;
SELECT id AS job, lease_token AS token FROM ck.claim('jobs') \gset
SELECT id AS job, lease_token AS token, payload AS next FROM ck.complete_and_claim('jobs', :job, :token) \gset
SELECT :'next' AS next, (SELECT count(*) FROM jobs) AS jobs_left;
SELECT count(*) AS claimed, min(attempts) AS attempts FROM ck.complete_and_claim('jobs', :job, :token, batch => 5, lease => '1 minute');
SELECT count(*) AS jobs_left, count(*) FILTER (WHERE lease_token IS NOT NULL) AS leased FROM jobs;
-- the token is spent: CK005, and nothing is claimed
SELECT test.outcome(format('SELECT * FROM ck.complete_and_claim(%L, %s, %s)', 'jobs', :job, :token));
TRUNCATE jobs;

-- failures: retry after retry_in (not claimable before), then dead letters at max_attempts
SELECT ck.enqueue('jobs', '{"n": 6}') AS job6 \gset
CREATE TEMP TABLE try1 AS SELECT * FROM ck.claim('jobs');
SELECT ck.fail('jobs', id, lease_token, 'boom 1', retry_in => '1 hour') FROM try1;
SELECT count(*) AS claimable_before_retry_time FROM ck.claim('jobs');
SELECT last_error, run_at > now() + interval '59 minutes' AS waits, lease_token IS NULL AS free FROM jobs;
UPDATE jobs SET run_at = now();
CREATE TEMP TABLE try2 AS SELECT * FROM ck.claim('jobs');
SELECT attempts FROM try2;
SELECT ck.fail('jobs', id, lease_token, 'boom 2') FROM try2;
SELECT count(*) AS in_queue FROM jobs;
SELECT id = :job6 AS same_id, attempts, last_error, job->'payload' AS payload FROM jobs_dead;
SELECT ready, scheduled, running, expired, dead, oldest_ready_age FROM ck.queue_stats('jobs');
-- default backoff: 2^attempts seconds, jittered into [0.5, 1) of that
SELECT ck.enqueue('jobs', '{"n": 7}') AS job7 \gset
CREATE TEMP TABLE try3 AS SELECT * FROM ck.claim('jobs');
SELECT ck.fail('jobs', id, lease_token) FROM try3;
SELECT run_at - now() BETWEEN interval '0.9 seconds' AND interval '2 seconds' AS backoff_in_range FROM jobs;
DELETE FROM jobs;

-- a job whose lease expires on its last attempt is buried, not handed out again
SELECT ck.enqueue('jobs', '{"n": 8}') AS job8 \gset
SELECT count(*) FROM ck.claim('jobs');
UPDATE jobs SET run_at = now() - interval '1 second';
SELECT count(*) FROM ck.claim('jobs');
UPDATE jobs SET run_at = now() - interval '1 second';
SELECT count(*) AS handed_out_after_max_attempts FROM ck.claim('jobs');
SELECT id = :job8 AS job8, attempts, last_error FROM jobs_dead WHERE id = :job8;

-- dead letters: back into the queue with attempts reset, or purged
SELECT ck.retry_dead('jobs', :job6) AS revived, ck.retry_dead('jobs', :job6) AS revived_twice;
SELECT id = :job6 AS same_id, attempts, lease_token, last_error, payload FROM jobs;
SELECT ck.purge_dead('jobs', '1 hour') AS purged_old, ck.purge_dead('jobs', '0 seconds') AS purged_all;
SELECT count(*) AS dead_left FROM jobs_dead;

-- the claim reads the index, never the whole table
INSERT INTO jobs (payload, priority) SELECT jsonb_build_object('n', g), g % 3 FROM generate_series(1, 5000) g;
ANALYZE jobs;
BEGIN;
SELECT count(*) FROM ck.claim('jobs', 5);   -- custom plans first, then the generic plan
DO $$ BEGIN FOR i IN 1..6 LOOP PERFORM * FROM ck.claim('jobs', 1); END LOOP; END $$;
SELECT seq_scan AS seq_before, idx_scan AS idx_before FROM pg_stat_xact_user_tables
WHERE relid = 'jobs'::regclass \gset
SELECT count(*) FROM ck.claim('jobs', 5);
SELECT count(*) FROM ck.claim('jobs', 50);
SELECT seq_scan - :seq_before AS seq_scans, idx_scan > :idx_before AS used_index FROM pg_stat_xact_user_tables
WHERE relid = 'jobs'::regclass;
ROLLBACK;

-- a claim planned while its queue was empty is planned again once the queue has grown
-- (checked every 64th claim): no waiting for autovacuum's ANALYZE with a plan that scans
-- the whole table on every claim (a fresh backend, so the count of claims starts at 0)
\c
SELECT ck.create_queue('grows') IS NOT NULL AS created;
ALTER TABLE grows SET (autovacuum_enabled = false);
SELECT count(*) AS planned_empty FROM ck.claim('grows');
INSERT INTO grows (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, 20000) g;
BEGIN;
SELECT count(*) AS claims FROM generate_series(1, 10) AS g, ck.claim('grows', 1 + 0 * g);
SELECT seq_scan > 0 AS empty_plan_scans_table FROM pg_stat_xact_user_tables WHERE relid = 'grows'::regclass;
SELECT count(*) AS claims FROM generate_series(1, 54) AS g, ck.claim('grows', 1 + 0 * g);
SELECT seq_scan AS seq_before FROM pg_stat_xact_user_tables WHERE relid = 'grows'::regclass \gset
SELECT count(*) AS claims FROM generate_series(1, 20) AS g, ck.claim('grows', 1 + 0 * g);
SELECT seq_scan - :seq_before AS seq_scans_after_replanning FROM pg_stat_xact_user_tables
WHERE relid = 'grows'::regclass;
COMMIT;
SELECT ck.drop_queue('grows');

-- claim_wait: returns at once when jobs are there, after max_wait when none are
SELECT count(*) FROM ck.claim_wait('jobs', 3, '1 minute', '5 seconds');
-- claim's defaults (batch 1, the queue's lease), and max_wait '10 seconds'
INSERT INTO jobs (payload) VALUES ('{"n": "defaults"}');
SELECT count(*) AS claimed, bool_and(lease_until - now() BETWEEN interval '29 seconds' AND interval '31 seconds') AS queue_lease
FROM ck.claim_wait('jobs');
SELECT pg_get_function_arguments('ck.claim'::regproc) AS claim, pg_get_function_arguments('ck.claim_wait'::regproc) AS claim_wait;
DELETE FROM jobs;
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) FROM ck.claim_wait('jobs', 1, '1 minute', '300 ms');
SELECT clock_timestamp() - :'t0' BETWEEN interval '250 ms' AND interval '3 seconds' AS waited_about_max_wait;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT test.outcome($$SELECT * FROM ck.claim_wait('jobs', 1, '1 minute', '1 second')$$);
ROLLBACK;

-- schema-qualified names, notify (test/specs/queue_notify.spec listens), drop_queue
CREATE SCHEMA work;
SELECT ck.create_queue('work."Mail Out"', notify => true);
SELECT tgname, tgtype FROM pg_trigger WHERE tgrelid = 'work."Mail Out"'::regclass;
SELECT ck.enqueue('work."Mail Out"', '{"to": "a@example.com"}');
SELECT id, payload FROM ck.claim('work."Mail Out"');
SELECT ck.drop_queue('work."Mail Out"');
SELECT count(*) AS registered FROM ck.queues WHERE queue::text LIKE '%Mail%';

-- bad input: a clear error with a fitting SQLSTATE, and nothing changed
CREATE TABLE not_a_queue (id bigint PRIMARY KEY);
SELECT statement, test.outcome(statement) FROM (VALUES
    ($s$SELECT ck.create_queue('jobs')$s$),
    ($s$SELECT ck.create_queue('not_a_queue')$s$),
    ($s$SELECT ck.create_queue(NULL)$s$),
    ($s$SELECT ck.create_queue('')$s$),
    ($s$SELECT ck.create_queue('q2', lease => '0 seconds')$s$),
    ($s$SELECT ck.create_queue('q2', lease => '-1 minute')$s$),
    ($s$SELECT ck.create_queue('q2', max_attempts => 0)$s$),
    ($s$SELECT ck.create_queue('q2', max_attempts => 100000)$s$),
    ($s$SELECT ck.create_queue('no_such_schema.q2')$s$),
    ($s$SELECT ck.create_queue('a.b.c.d')$s$),
    ($s$SELECT ck.create_queue('q2; DROP TABLE jobs')$s$),
    ($s$SELECT * FROM ck.claim('jobs', 0)$s$),
    ($s$SELECT * FROM ck.claim('jobs', -1)$s$),
    ($s$SELECT * FROM ck.claim('jobs', 10001)$s$),
    ($s$SELECT * FROM ck.claim('jobs', NULL)$s$),
    ($s$SELECT * FROM ck.claim('jobs', 1, '0 seconds')$s$),
    ($s$SELECT * FROM ck.claim('jobs', 1, '-5 seconds')$s$),
    ($s$SELECT * FROM ck.claim(NULL)$s$),
    ($s$SELECT * FROM ck.claim('not_a_queue')$s$),
    ($s$SELECT * FROM ck.claim('pg_class')$s$),
    ($s$SELECT * FROM ck.claim_wait('jobs', 1, '1 minute', NULL)$s$),
    ($s$SELECT * FROM ck.claim_wait('jobs', 1, '1 minute', '-1 second')$s$),
    ($s$SELECT ck.enqueue('jobs', NULL)$s$),
    ($s$SELECT ck.enqueue('not_a_queue')$s$),
    ($s$SELECT ck.complete('jobs', NULL, 1)$s$),
    ($s$SELECT ck.complete('jobs', 1, NULL)$s$),
    ($s$SELECT * FROM ck.complete_many('jobs', NULL, '{1}')$s$),
    ($s$SELECT * FROM ck.complete_many('jobs', '{1}', NULL)$s$),
    ($s$SELECT * FROM ck.complete_many('jobs', '{1,2}', '{1}')$s$),
    ($s$SELECT * FROM ck.complete_many('jobs', '{1,NULL}', '{1,2}')$s$),
    ($s$SELECT * FROM ck.complete_many('jobs', '{{1,2},{3,4}}', '{{1,2},{3,4}}')$s$),
    ($s$SELECT * FROM ck.complete_many('jobs', ARRAY(SELECT generate_series(1, 10001)::bigint),
                                       ARRAY(SELECT generate_series(1, 10001)::bigint))$s$),
    ($s$SELECT * FROM ck.complete_many('not_a_queue', '{1}', '{1}')$s$),
    ($s$SELECT * FROM ck.complete_and_claim(NULL, 1, 1)$s$),
    ($s$SELECT * FROM ck.complete_and_claim('jobs', NULL, 1)$s$),
    ($s$SELECT * FROM ck.complete_and_claim('jobs', 1, NULL)$s$),
    ($s$SELECT * FROM ck.complete_and_claim('jobs', 1, 1, batch => 0)$s$),
    ($s$SELECT * FROM ck.complete_and_claim('jobs', 1, 1, batch => 10001)$s$),
    ($s$SELECT * FROM ck.complete_and_claim('jobs', 1, 1, batch => NULL)$s$),
    ($s$SELECT * FROM ck.complete_and_claim('jobs', 1, 1, lease => '-1 second')$s$),
    ($s$SELECT * FROM ck.complete_and_claim('jobs', 1, 1)$s$),
    ($s$SELECT * FROM ck.complete_and_claim('not_a_queue', 1, 1)$s$),
    ($s$SELECT ck.fail('jobs', 1, 1, 'x', '-1 second')$s$),
    ($s$SELECT ck.extend_lease('jobs', 1, 1, '0 seconds')$s$),
    ($s$SELECT ck.extend_lease('jobs', 1, 1, NULL)$s$),
    ($s$SELECT ck.purge_dead('jobs', '-1 day')$s$),
    ($s$SELECT ck.retry_dead('not_a_queue', 1)$s$),
    ($s$SELECT * FROM ck.queue_stats('not_a_queue')$s$),
    ($s$SELECT ck.drop_queue('not_a_queue')$s$)
) AS bad(statement);
SELECT count(*) AS queues FROM ck.queues;
