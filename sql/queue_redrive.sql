-- Bulk redrive and purge of dead letters by filter (1.1.0): ck.retry_dead_matching and
-- ck.purge_dead_matching, one bounded batch per call, oldest first. The races are
-- test/specs/queue_redrive_race.spec.
SELECT ck.create_queue('rq', max_attempts => 1) IS NOT NULL AS created;
-- Six dead letters: reasons, tenants, attempts and ages that tell them apart.
SELECT count(ck.enqueue('rq', jsonb_build_object('n', g, 'tenant', g % 2, 'tags', jsonb_build_array('t' || g % 3)),
                         unique_key => CASE WHEN g = 3 THEN 'k3' END))
FROM generate_series(1, 6) AS g;
SELECT count(ck.fail('rq', id, lease_token, CASE WHEN id <= 4 THEN 'SMTP timeout' ELSE 'bad address' END))
FROM ck.claim('rq', 10);
UPDATE rq_dead SET died_at = now() - interval '2 days', attempts = 3 WHERE id IN (1, 2);
CREATE FUNCTION pg_temp.dead() RETURNS TABLE (id bigint, last_error text, attempts integer) LANGUAGE sql AS $$
    SELECT id, last_error, attempts FROM rq_dead ORDER BY id
$$;

-- Each condition narrows; NULL is no condition. Purge by exact reason and age: only 1 and 2.
SELECT ck.purge_dead_matching('rq', last_error => 'SMTP timeout', older_than => '1 day', batch => 1) AS purged;
SELECT array_agg(id) AS left FROM pg_temp.dead();
SELECT ck.purge_dead_matching('rq', last_error => 'SMTP timeout', older_than => '1 day') AS purged;
SELECT ck.purge_dead_matching('rq', min_attempts => 2) AS none_left;
-- Redrive by pattern and payload containment (jsonb @>, on the job's payload): a redriven job
-- keeps its id, ready now, its attempts reset.
SELECT ck.retry_dead_matching('rq', error_like => 'bad%', payload_contains => '{"tenant": 1}') AS redriven;
SELECT id, attempts, lease_token, last_error, run_at <= now() AS ready FROM rq ORDER BY id;
-- One whose unique key another job holds now stays dead (3 here; 6 goes back).
SELECT ck.enqueue('rq', unique_key => 'k3') AS holder \gset
SELECT ck.retry_dead_matching('rq', payload_contains => '{"tags": ["t0"]}') AS redriven;
SELECT array_agg(id ORDER BY id) AS in_queue FROM rq;
SELECT * FROM pg_temp.dead();
-- Once the key is free it goes back too.
SELECT count(ck.complete('rq', id, lease_token)) FROM ck.claim('rq', 10);
SELECT ck.retry_dead_matching('rq') AS redriven;
SELECT id, unique_key FROM rq ORDER BY id;
SELECT count(ck.complete('rq', id, lease_token)) FROM ck.claim('rq', 10);
-- The 1.0 call keeps its meaning.
SELECT count(ck.enqueue('rq')) FROM generate_series(1, 2);
SELECT count(ck.fail('rq', id, lease_token)) FROM ck.claim('rq', 10);
SELECT ck.purge_dead('rq', '1 day') AS purged_none, ck.purge_dead('rq', '0') AS purged_all;

-- Bad input: nothing changes.
SELECT test.outcome($$SELECT ck.retry_dead_matching(NULL)$$);
SELECT test.outcome($$SELECT ck.purge_dead_matching('rq', batch => NULL)$$);
SELECT test.outcome($$SELECT ck.purge_dead_matching('rq', batch => 0)$$);
SELECT test.outcome($$SELECT ck.retry_dead_matching('rq', batch => 10001)$$);
SELECT test.outcome($$SELECT ck.purge_dead_matching('rq', older_than => '-1 second')$$);
SELECT test.outcome($$SELECT ck.purge_dead_matching('rq', min_attempts => -1)$$);
SELECT test.outcome($$SELECT ck.purge_dead_matching('pg_class')$$);
SELECT test.outcome($$SELECT ck.purge_dead_matching('rq', payload_contains => 'not json')$$);

-- Labels: VOLATILE, PARALLEL UNSAFE, SECURITY INVOKER, no SET clause.
SELECT p.proname, p.provolatile, p.proparallel, p.prosecdef, p.proconfig
FROM pg_proc AS p WHERE p.pronamespace = 'ck'::regnamespace AND p.proname LIKE '%dead_matching' ORDER BY 1;

-- Privileges (management calls, as ck.purge_dead and ck.retry_dead): purging takes SELECT,
-- UPDATE (FOR UPDATE SKIP LOCKED) and DELETE on the dead letters, redriving also INSERT and
-- SELECT on the queue. The filters are values, never SQL.
SELECT count(ck.enqueue('rq')) FROM generate_series(1, 3);
SELECT count(ck.fail('rq', id, lease_token, 'x')) FROM ck.claim('rq', 10);
SELECT ck.purge_dead_matching('rq', last_error => $$x' OR true --$$, error_like => $$%') OR (true$$,
                              payload_contains => '{"a": "1) OR (true"}') AS nothing;

CREATE ROLE regress_ck_redrive;
\set VERBOSITY terse
SET ROLE regress_ck_redrive;
SELECT ck.purge_dead_matching('rq');
RESET ROLE;
GRANT SELECT, UPDATE, DELETE ON rq_dead TO regress_ck_redrive;
SET ROLE regress_ck_redrive;
SELECT ck.purge_dead_matching('rq', batch => 1) AS purged;
SELECT ck.retry_dead_matching('rq');
RESET ROLE;
\set VERBOSITY default
GRANT SELECT, INSERT ON rq TO regress_ck_redrive;
SET ROLE regress_ck_redrive;
SELECT ck.retry_dead_matching('rq') AS redriven;
RESET ROLE;
REVOKE ALL ON rq, rq_dead FROM regress_ck_redrive;
DROP ROLE regress_ck_redrive;
SELECT ck.drop_queue('rq');
