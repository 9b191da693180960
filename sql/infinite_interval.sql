-- 'infinity' and '-infinity' intervals (PostgreSQL 17+; run only there). A lease, a retry
-- delay and a purge age must be finite: 22023 with a hint, and nothing changed. A wait or a
-- lock timeout of 'infinity' has no bound of its own, as a century or more has.
SELECT ck.create_queue('forever', lease => '30 seconds', max_attempts => 3);
SELECT ck.enqueue('forever', '{"n": 1}');
CREATE TEMP TABLE held AS SELECT id, lease_token FROM ck.claim('forever');
SELECT ck.enqueue('forever', '{"n": 2}');
INSERT INTO forever_dead (id, job, attempts, died_at) VALUES (99, '{}', 3, now() - interval '1 day');
CREATE TEMP TABLE jobs_before AS SELECT * FROM forever;

SELECT statement, test.outcome(statement) FROM (VALUES
    ($s$SELECT ck.create_queue('forever2', lease => 'infinity')$s$),
    ($s$SELECT ck.create_queue('forever2', lease => '-infinity')$s$),
    ($s$SELECT * FROM ck.claim('forever', 1, 'infinity')$s$),
    ($s$SELECT * FROM ck.claim('forever', 1, '-infinity')$s$),
    ($s$SELECT * FROM ck.claim_wait('forever', 1, 'infinity', '1 second')$s$),
    ($s$SELECT * FROM ck.claim_wait('forever', 1, '-infinity', '1 second')$s$),
    ($s$SELECT * FROM ck.claim_wait('forever', 1, '1 minute', '-infinity')$s$),
    ($s$SELECT c.* FROM held, ck.complete_and_claim('forever', held.id, held.lease_token, lease => 'infinity') AS c$s$),
    ($s$SELECT ck.extend_lease('forever', id, lease_token, 'infinity') FROM held$s$),
    ($s$SELECT ck.extend_lease('forever', id, lease_token, '-infinity') FROM held$s$),
    ($s$SELECT ck.fail('forever', id, lease_token, 'x', 'infinity') FROM held$s$),
    ($s$SELECT ck.fail('forever', id, lease_token, 'x', '-infinity') FROM held$s$),
    ($s$SELECT ck.purge_dead('forever', 'infinity')$s$),
    ($s$SELECT ck.purge_dead('forever', '-infinity')$s$),
    ($s$SELECT ck.purge_dead_matching('forever', older_than => 'infinity')$s$),
    ($s$SELECT ck.retry_dead_matching('forever', older_than => '-infinity')$s$),
    ($s$SELECT ck.set_history('forever', 'infinity')$s$),
    ($s$SELECT ck.set_history('forever', '1 day', 'infinity')$s$),
    ($s$SELECT * FROM ck.await_job('forever', 1, '-infinity')$s$),
    ($s$SELECT ck.xact_lock(1, 1, '-infinity')$s$),
    ($s$SELECT ck.session_lock('reports', 1, '-infinity')$s$)
) AS bad(statement);
-- a job timeout is finite too (the check constraint of ck.queues)
SELECT test.outcome($$UPDATE ck.queues SET timeout = 'infinity' WHERE queue = 'forever'::regclass$$) LIKE '23514:%' AS infinite_timeout_refused;
-- nothing changed: no second queue, the same jobs (the held one still held, the other
-- unclaimed), the dead letter still there
SELECT count(*) AS forever2_registered, to_regclass('forever2') AS forever2_table
FROM ck.queues WHERE queue::text LIKE 'forever2%';
SELECT (SELECT count(*) FROM (TABLE forever EXCEPT TABLE jobs_before) AS d) AS changed_rows,
       (SELECT count(*) FROM (TABLE jobs_before EXCEPT TABLE forever) AS d) AS lost_rows;
SELECT count(*) AS dead_letters FROM forever_dead;
-- ck.queues itself refuses an infinite lease set by hand (its CHECK queues_lease_check is
-- lease > '0' AND isfinite(lease) from 0.2.1), as it refuses a negative one: 23514, the
-- row unchanged. (The detail, the failing row with its created_at, is cut off.)
SELECT statement, split_part(test.outcome(statement), ' (Failing row', 1) AS outcome FROM (VALUES
    ($s$UPDATE ck.queues SET lease = 'infinity' WHERE queue = 'forever'::regclass$s$),
    ($s$UPDATE ck.queues SET lease = '-infinity' WHERE queue = 'forever'::regclass$s$)
) AS bad(statement);
SELECT lease FROM ck.queues WHERE queue = 'forever'::regclass;
-- what the hints suggest works
SELECT ck.extend_lease('forever', id, lease_token, '1 hour') > now() + interval '59 minutes' AS extended FROM held;
SELECT ck.purge_dead('forever', '0') AS purged;

-- claim_wait's max_wait => 'infinity': returns as soon as a job is ready...
SELECT clock_timestamp() AS t0 \gset
SELECT payload FROM ck.claim_wait('forever', 1, '1 minute', 'infinity');
SELECT clock_timestamp() - :'t0' < interval '3 seconds' AS returned_at_once;
-- ... and on an empty queue waits until statement_timeout (57014) or a cancel
SET statement_timeout = '200ms';
\set VERBOSITY sqlstate
SELECT * FROM ck.claim_wait('forever', 1, '1 minute', 'infinity');
\set VERBOSITY default
RESET statement_timeout;

-- lock timeouts: 'infinity' is lock_timeout's largest value, INT_MAX ms, as any timeout
-- longer than that is
SELECT ck.lock_namespace('reports') IS NOT NULL AS created;
SET lock_timeout = '7s';
BEGIN;
SELECT ck.xact_lock(1, 1, 'infinity');
SELECT ck.xact_lock('reports', 2, timeout => 'infinity');
SHOW lock_timeout;   -- the caller's again after the call
SELECT ck.set_lock_timeout('infinity');
SHOW lock_timeout;
SELECT test.outcome($$SELECT ck.set_lock_timeout('-infinity')$$);
ROLLBACK;
SELECT ck.session_lock(1, 2, 'infinity');
SELECT ck.session_unlock(1, 2);
RESET lock_timeout;

SELECT ck.drop_queue('forever');
