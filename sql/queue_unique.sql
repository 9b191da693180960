-- Unique jobs and cancellation (0.3.0). The races are test/specs/queue_unique_race.spec and
-- test/specs/queue_cancel.spec.
SELECT ck.create_queue('uq', max_attempts => 2) IS NOT NULL AS created;
SELECT indexdef FROM pg_indexes WHERE tablename = 'uq' AND indexdef LIKE '%unique_key%';

-- A key is held by one job while it waits, is scheduled or runs; a duplicate inserts nothing
-- and returns the holder's id.
SELECT ck.enqueue('uq', '{"n": 1}', unique_key => 'mail:7') AS first \gset
SELECT ck.enqueue('uq', '{"n": 2}', unique_key => 'mail:7') = :first AS same_job;
SELECT id = :first AS same_job, inserted FROM ck.enqueue_unique('uq', 'mail:7', '{"n": 3}');
SELECT count(*) AS jobs, max(payload->>'n') AS payload_kept FROM uq;
-- Other keys and no key at all are independent.
SELECT inserted FROM ck.enqueue_unique('uq', 'mail:8', '{}');
SELECT ck.enqueue('uq') <> ck.enqueue('uq') AS keyless_jobs_are_separate;
-- Scheduled and running jobs hold their key too.
SELECT inserted FROM ck.enqueue_unique('uq', 'later', '{}', run_at => now() + interval '1 hour');
SELECT inserted FROM ck.enqueue_unique('uq', 'later', '{}');
SELECT count(*) AS claimed FROM (SELECT * FROM ck.claim('uq', 10)) AS c;
SELECT inserted FROM ck.enqueue_unique('uq', 'mail:7', '{}');

-- Retry keeps the key (no 23505); the last attempt's failure buries the job and frees it.
DELETE FROM uq;
SELECT ck.enqueue('uq', unique_key => 'r') AS r \gset
SELECT ck.fail('uq', id, lease_token, 'first', '0 seconds') FROM ck.claim('uq');
SELECT inserted FROM ck.enqueue_unique('uq', 'r', '{}');
SELECT ck.fail('uq', id, lease_token, 'second') FROM ck.claim('uq');
SELECT id = :r AS new_job_after_burial, inserted FROM ck.enqueue_unique('uq', 'r', '{}');
-- The buried job keeps its key in its dead letter: reviving it while the key is taken
-- raises 23505 and changes nothing.
SELECT job->>'unique_key' AS dead_key FROM uq_dead WHERE id = :r;
SELECT test.outcome(format('SELECT ck.retry_dead(%L, %s)', 'uq', :r)) LIKE '23505:%' AS revive_refused;
SELECT count(*) AS still_dead FROM uq_dead WHERE id = :r;

-- Cancellation: a waiting job goes to the dead letters with the reason cancelled and frees
-- its key; a running one likewise, and its worker finds the lease lost.
DELETE FROM uq;
SELECT ck.enqueue('uq', unique_key => 'c1') AS c1 \gset
SELECT ck.cancel('uq', :c1);
SELECT last_error, job->>'unique_key' AS key FROM uq_dead WHERE id = :c1;
SELECT inserted FROM ck.enqueue_unique('uq', 'c1', '{}');
SELECT ck.cancel('uq', :c1) AS again;
SELECT ck.cancel('uq', -1) AS no_such_job;
CREATE TEMP TABLE running AS SELECT id, lease_token FROM ck.claim('uq');
SELECT ck.cancel('uq', id) FROM running;
SELECT ck.try_complete('uq', id, lease_token) AS completed, ck.try_fail('uq', id, lease_token) AS failed,
       ck.try_extend_lease('uq', id, lease_token, '1 minute') AS extended FROM running;
SELECT test.outcome(format('SELECT ck.complete(%L, %s, %s)', 'uq', id, lease_token)) LIKE 'CK005:%' AS complete_raises
FROM running;
SELECT test.outcome(format('SELECT * FROM ck.complete_and_claim(%L, %s, %s)', 'uq', id, lease_token)) LIKE 'CK005:%'
    AS complete_and_claim_raises_lease_lost
FROM running;
-- A cancelled job can be revived like any dead letter.
SELECT ck.retry_dead('uq', id) AS revived FROM running;
SELECT count(*) AS back FROM uq;
-- A cancel rolled back: the job is back where it was and the next claim gets it.
DELETE FROM uq;
SELECT ck.enqueue('uq') AS rb \gset
BEGIN;
SELECT ck.cancel('uq', :rb);
ROLLBACK;
SELECT id = :rb AS claimed_after_rollback FROM ck.claim('uq');

-- A time window (unique_for): the key stays taken after its job is done, for that long from
-- the enqueue that took it; a duplicate gets the id of the job that took the window.
DELETE FROM uq;
SELECT id AS tick, inserted FROM ck.enqueue_unique('uq', 'tick:1', '{}', unique_for => '1 hour') \gset
SELECT :'inserted' AS took_the_window;
SELECT ck.complete('uq', id, lease_token) AS done FROM ck.claim('uq');
SELECT id = :tick AS same_job, inserted FROM ck.enqueue_unique('uq', 'tick:1', '{}', unique_for => '1 hour');
SELECT ck.enqueue('uq', unique_key => 'tick:1', unique_for => '1 hour') = :tick AS enqueue_too;
SELECT count(*) AS jobs FROM uq;
SELECT unique_key, job = :tick AS job_named, until > now() + interval '59 minutes' AS for_an_hour
FROM ck.unique_windows WHERE queue = 'uq'::regclass;
-- Without unique_for the window is not consulted: only a job in the queue holds the key.
SELECT inserted AS plain_key_inserts FROM ck.enqueue_unique('uq', 'tick:1', '{}');
-- While the window's job is still in the queue after the window ended, that job holds the key.
UPDATE ck.unique_windows SET until = now() - interval '1 second' WHERE queue = 'uq'::regclass;
SELECT inserted AS window_taken_again_job_still_there FROM ck.enqueue_unique('uq', 'tick:1', '{}', unique_for => '1 hour');
-- Ended windows are removed by later windowed enqueues of the queue.
DELETE FROM uq;
UPDATE ck.unique_windows SET until = now() - interval '1 second' WHERE queue = 'uq'::regclass;
SELECT inserted FROM ck.enqueue_unique('uq', 'tick:2', '{}', unique_for => '1 minute');
SELECT array_agg(unique_key ORDER BY unique_key) AS windows_left FROM ck.unique_windows WHERE queue = 'uq'::regclass;
-- A window taken in a transaction that rolls back was never taken.
BEGIN;
SELECT inserted FROM ck.enqueue_unique('uq', 'tick:3', '{}', unique_for => '1 minute');
ROLLBACK;
SELECT count(*) AS windows_of_tick_3 FROM ck.unique_windows WHERE unique_key = 'tick:3';

-- Bad input.
SELECT test.outcome($$SELECT ck.enqueue('uq', unique_for => '1 hour')$$);
SELECT test.outcome($$SELECT ck.enqueue('uq', unique_key => 'k', unique_for => '0')$$);
SELECT test.outcome($$SELECT ck.enqueue('uq', unique_key => 'k', unique_for => '-1 hour')$$);
SELECT test.outcome($$SELECT * FROM ck.enqueue_unique('uq', 'k', '{}', unique_for => '-1 second')$$);
SELECT ck.enqueue('uq', unique_key => 'k', unique_for => NULL) > 0 AS null_window_is_no_window;
SELECT test.outcome('SELECT ck.cancel(NULL, 1)');
SELECT test.outcome($$SELECT ck.cancel('uq', NULL)$$);
SELECT test.outcome('SELECT ck.cancel(''pg_class'', 1)');
SELECT test.outcome($$SELECT * FROM ck.enqueue_unique('uq', NULL, '{}')$$);
SELECT test.outcome($$SELECT * FROM ck.enqueue_unique(NULL, 'k', '{}')$$);
SELECT test.outcome($$SELECT * FROM ck.enqueue_unique('uq', 'k', NULL)$$);
-- the payload has no default (R1): the 0.x call with the payload in the key's place and no
-- payload gets 42883 instead of storing the payload as the key
SELECT test.outcome($$SELECT * FROM ck.enqueue_unique('uq', '{"to": "z@example.com"}')$$);
SELECT count(*) AS payload_stored_as_key FROM uq WHERE unique_key LIKE '{%';
SELECT ck.enqueue('uq', unique_key => NULL) IS NOT NULL AS null_key_is_no_key;
-- A queue whose unique index was dropped says so.
DROP INDEX uq_unique_key_idx;
SELECT test.outcome($$SELECT ck.enqueue('uq', unique_key => 'x')$$);

SELECT ck.drop_queue('uq');
SELECT count(*) AS windows_after_drop FROM ck.unique_windows;
