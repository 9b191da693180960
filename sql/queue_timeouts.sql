-- Job timeouts, distinct from the lease (1.1.0): ck.queues.timeout bounds each attempt, whatever
-- its heartbeats. The race with a completion is test/specs/queue_timeout_race.spec.
SELECT ck.create_queue('tq', lease => '1 hour', max_attempts => 2) IS NOT NULL AS created;
-- Off by default; only the owner's UPDATE of ck.queues sets it, like lease.
SELECT timeout FROM ck.queues WHERE queue = 'tq'::regclass;
UPDATE ck.queues SET timeout = '10 minutes' WHERE queue = 'tq'::regclass;

-- The claim caps the lease at the timeout and records the attempt's deadline (timeout_at).
SELECT ck.enqueue('tq', '{"n": 1}') AS job \gset
SELECT id, lease_token, lease_until FROM ck.claim('tq') \gset
SELECT lease_until = timeout_at AS lease_capped,
       timeout_at - now() BETWEEN '9 minutes' AND '10 minutes' AS deadline_in_10_minutes
FROM tq, (SELECT :'lease_until'::timestamptz AS lease_until) AS c WHERE id = :id;
-- A heartbeat never carries the lease past the deadline: capped, and the capped end returned.
SELECT ck.extend_lease('tq', :id, :lease_token, '1 day') = timeout_at AS extend_capped FROM tq WHERE id = :id;
SELECT ck.extend_lease('tq', :id, :lease_token, '1 second') < timeout_at AS shorter_kept FROM tq WHERE id = :id;
-- A claim's own lease shorter than the timeout is kept; a completion in time succeeds.
SELECT ck.complete('tq', :id, :lease_token);
SELECT ck.enqueue('tq') AS job \gset
SELECT id, lease_token, lease_until FROM ck.claim('tq', lease => '1 minute') \gset
SELECT :'lease_until'::timestamptz < timeout_at - interval '8 minutes' AS own_lease FROM tq WHERE id = :id;
SELECT ck.complete('tq', :id, :lease_token);

-- At the deadline the attempt has failed: every acknowledgement finds the lease lost (CK005 or
-- the try_ forms' failure values), and the next claim's burial retries it with the reason
-- 'timeout' after the usual backoff (a timeout of 1 microsecond has passed by the next statement).
UPDATE ck.queues SET timeout = '1 microsecond' WHERE queue = 'tq'::regclass;
SELECT ck.enqueue('tq', '{"n": 2}') AS job \gset
SELECT id, lease_token FROM ck.claim('tq') \gset
SELECT ck.try_complete('tq', :id, :lease_token) AS completed, ck.try_extend_lease('tq', :id, :lease_token, '1 minute') AS extended,
       ck.try_fail('tq', :id, :lease_token, 'late') AS failed;
SELECT test.outcome(format('SELECT ck.complete(%L, %s, %s)', 'tq', :id, :lease_token)) LIKE 'CK005:%' AS complete_raises;
SELECT test.outcome(format('SELECT ck.extend_lease(%L, %s, %s, %L)', 'tq', :id, :lease_token, '1 minute')) LIKE 'CK005:%' AS extend_raises;
SELECT test.outcome(format('SELECT ck.complete_many(%L, ARRAY[%s], ARRAY[%s])', 'tq', :id, :lease_token)) LIKE 'CK005:%' AS complete_many_raises;
SELECT * FROM ck.try_complete_many('tq', ARRAY[:id]::bigint[], ARRAY[:lease_token]::bigint[]);
SELECT count(*) AS claimed FROM ck.claim('tq');
SELECT id, attempts, lease_token IS NULL AS released, last_error, run_at - now() BETWEEN '0.9 s' AND '2 s' AS backoff
FROM tq WHERE id = :id;
-- The last attempt that times out goes to the dead letters with last_error 'timeout'.
UPDATE tq SET run_at = now() WHERE id = :id;
SELECT id, attempts FROM ck.claim('tq');
SELECT count(*) AS claimed FROM ck.claim('tq');
SELECT id, attempts, last_error FROM tq_dead;
-- A lease that expires before the deadline is an expired lease, as before: ready again at once.
UPDATE ck.queues SET timeout = '1 hour' WHERE queue = 'tq'::regclass;
SELECT ck.enqueue('tq') AS job \gset
SELECT id, lease_token FROM ck.claim('tq', lease => '1 microsecond') \gset
SELECT id, attempts FROM ck.claim('tq');
SELECT last_error IS NULL AS no_error FROM tq WHERE id = :job;
DELETE FROM tq;

-- Queues without a timeout are as before: no deadline recorded, heartbeats uncapped.
UPDATE ck.queues SET timeout = NULL WHERE queue = 'tq'::regclass;
SELECT ck.enqueue('tq') AS job \gset
SELECT id, lease_token FROM ck.claim('tq') \gset
SELECT timeout_at IS NULL AS no_deadline FROM tq WHERE id = :job;
SELECT ck.extend_lease('tq', :id, :lease_token, '1 day') > now() + interval '23 hours' AS uncapped;
SELECT ck.complete('tq', :id, :lease_token);

-- Bad settings are refused by ck.queues' check (23514): zero, negative, infinite.
SELECT test.outcome($$UPDATE ck.queues SET timeout = '0' WHERE queue = 'tq'::regclass$$) LIKE '23514:%' AS zero;
SELECT test.outcome($$UPDATE ck.queues SET timeout = '-1 minute' WHERE queue = 'tq'::regclass$$) LIKE '23514:%' AS negative;
SELECT timeout FROM ck.queues WHERE queue = 'tq'::regclass;
-- A timeout past the last timestamp is none (the claim does not fail on it).
UPDATE ck.queues SET timeout = '178000000 years' WHERE queue = 'tq'::regclass;
SELECT ck.enqueue('tq') AS job \gset
SELECT count(ck.complete('tq', id, lease_token)) AS completed FROM ck.claim('tq');
UPDATE ck.queues SET timeout = NULL WHERE queue = 'tq'::regclass;
-- Not on a distributed queue (0A000; its shards' settings are theirs): tq passed for one here.
INSERT INTO ck.distributed_queues (queue, parts, shards) VALUES ('tq', '{0}', '{tq_102008}');
SELECT test.outcome($$UPDATE ck.queues SET timeout = '1 minute' WHERE queue = 'tq'::regclass$$);
DELETE FROM ck.distributed_queues WHERE queue = 'tq'::regclass;

-- Privileges: another role can neither set a queue's timeout (row-level security: nothing
-- updated) nor run past it; a worker with today's rights (SELECT, UPDATE, DELETE on the queue,
-- INSERT on its dead letters) claims, heartbeats and has timed-out attempts failed.
CREATE ROLE regress_ck_timeouts;
SET ROLE regress_ck_timeouts;
UPDATE ck.queues SET timeout = '1 second' WHERE queue = 'tq'::regclass;
RESET ROLE;
SELECT timeout FROM ck.queues WHERE queue = 'tq'::regclass;
UPDATE ck.queues SET timeout = '1 microsecond' WHERE queue = 'tq'::regclass;
GRANT SELECT, UPDATE, DELETE ON tq TO regress_ck_timeouts;
GRANT INSERT ON tq_dead TO regress_ck_timeouts;
SELECT ck.enqueue('tq') AS job \gset
SET ROLE regress_ck_timeouts;
SELECT id, lease_token FROM ck.claim('tq') \gset
SELECT ck.try_extend_lease('tq', :id, :lease_token, '1 minute') AS extended;
SELECT count(*) AS claimed FROM ck.claim('tq');
RESET ROLE;
SELECT attempts, last_error FROM tq WHERE id = :job;
REVOKE ALL ON tq, tq_dead FROM regress_ck_timeouts;
DROP ROLE regress_ck_timeouts;
SELECT ck.drop_queue('tq');
