-- Concurrency limits (0.3.0): at most max_running jobs of a key ready or leased at once, the
-- others parked until a job of the key leaves the queue. The races are
-- test/specs/queue_limits_race.spec.
SELECT ck.create_queue('lq', lease => '1 hour', max_attempts => 2) IS NOT NULL AS created;
CREATE FUNCTION pg_temp.jobs() RETURNS TABLE (id bigint, key text, parked boolean, leased boolean)
LANGUAGE sql AS $$
    SELECT id, concurrency_key, run_at = 'infinity' AND parked_run_at IS NOT NULL, lease_token IS NOT NULL FROM lq ORDER BY id
$$;
CREATE FUNCTION pg_temp.free(k text) RETURNS integer LANGUAGE sql AS $$
    SELECT free FROM ck.concurrency_slots WHERE queue = 'lq'::regclass AND concurrency_key = k
$$;

-- Limit 2 for key a: the third and fourth jobs wait parked; b has no limit.
SELECT ck.set_concurrency_limit('lq', 'a', 2);
SELECT count(ck.enqueue('lq', jsonb_build_object('n', g), concurrency_key => 'a')) FROM generate_series(1, 4) AS g;
SELECT count(ck.enqueue('lq', concurrency_key => 'b')) FROM generate_series(1, 2);
SELECT * FROM pg_temp.jobs();
SELECT pg_temp.free('a') AS free_a, pg_temp.free('b') AS free_b;
-- A claim takes what is claimable, never a parked job, and walks none of them.
CREATE TEMP TABLE leased AS SELECT id, lease_token FROM ck.claim('lq', 10);
SELECT array_agg(id ORDER BY id) AS claimed FROM leased;
-- Completing a job of a hands its slot to the oldest parked job of a, ready from then on.
SELECT ck.complete('lq', id, lease_token) FROM leased WHERE id = 1;
SELECT * FROM pg_temp.jobs() WHERE key = 'a';
SELECT pg_temp.free('a') AS free_a;
SELECT array_agg(id) AS claimed_next FROM ck.claim('lq', 10);
-- A retry keeps the slot (the job stays in the queue); the burial of its last attempt hands it on.
SELECT ck.fail('lq', id, lease_token, 'boom', '0 seconds') FROM leased WHERE id = 2;
SELECT * FROM pg_temp.jobs() WHERE key = 'a';
SELECT id, attempts FROM ck.claim('lq', 10);
SELECT ck.fail('lq', 2, lease_token, 'boom again') FROM lq WHERE id = 2;
SELECT * FROM pg_temp.jobs() WHERE key = 'a';
SELECT pg_temp.free('a') AS free_a;

-- Cancelling a parked job frees nothing (it held no slot); cancelling a running one hands its slot on.
SELECT ck.enqueue('lq', concurrency_key => 'a') AS parked_job \gset
SELECT ck.cancel('lq', :parked_job);
SELECT pg_temp.free('a') AS free_a, count(*) FILTER (WHERE parked) AS parked FROM pg_temp.jobs() WHERE key = 'a';
SELECT ck.enqueue('lq', concurrency_key => 'a') AS waiting \gset
SELECT ck.cancel('lq', 3);
SELECT * FROM pg_temp.jobs() WHERE key = 'a';
-- A plain DELETE hands slots on too, one per job that left.
DELETE FROM lq WHERE concurrency_key = 'a' AND run_at <> 'infinity';
SELECT * FROM pg_temp.jobs() WHERE key = 'a';
SELECT pg_temp.free('a') AS free_a;
DELETE FROM lq;
SELECT pg_temp.free('a') AS free_a_empty;

-- A dead letter revived takes a slot if one is free, else waits parked.
SELECT ck.set_concurrency_limit('lq', 'a', 1);
SELECT ck.retry_dead('lq', 2);
SELECT ck.retry_dead('lq', 3);
SELECT * FROM pg_temp.jobs() WHERE key = 'a';
SELECT pg_temp.free('a') AS free_a;
DELETE FROM lq;

-- complete_many hands on one slot per job.
SELECT ck.set_concurrency_limit('lq', 'a', 2);
SELECT count(ck.enqueue('lq', concurrency_key => 'a')) FROM generate_series(1, 5);
SELECT count(*) FILTER (WHERE parked) AS parked FROM pg_temp.jobs();
SELECT count(*) AS done FROM (
    SELECT ck.complete_many('lq', array_agg(id), array_agg(lease_token)) FROM ck.claim('lq', 10)) AS c;
SELECT count(*) FILTER (WHERE parked) AS parked, count(*) FILTER (WHERE NOT parked) AS ready FROM pg_temp.jobs();
DELETE FROM lq;

-- A default for every key (a keeps its own limit, 2); 0 holds a key back; NULL removes a
-- limit, and a then falls back to the default.
SELECT ck.set_concurrency_limit('lq', NULL, 1);
SELECT count(ck.enqueue('lq', concurrency_key => k)) FROM unnest(ARRAY['x', 'x', 'y', 'a', 'a', 'a']) AS k;
SELECT key, count(*) FILTER (WHERE NOT parked) AS ready, count(*) FILTER (WHERE parked) AS parked
FROM pg_temp.jobs() GROUP BY key ORDER BY key;
SELECT ck.set_concurrency_limit('lq', 'x', 0);
SELECT ck.set_concurrency_limit('lq', 'a', NULL);
SELECT ck.set_concurrency_limit('lq', 'y', 3);
SELECT key, count(*) FILTER (WHERE NOT parked) AS ready, count(*) FILTER (WHERE parked) AS parked
FROM pg_temp.jobs() GROUP BY key ORDER BY key;
SELECT concurrency_key, max_running FROM ck.concurrency_limits WHERE queue = 'lq'::regclass ORDER BY 1 NULLS FIRST;
-- A limit lowered below the jobs that run (x to 0 above, a to 1 below): they finish, and only
-- then do parked jobs move up. Removing the default unparks the keys that had only it.
SELECT ck.set_concurrency_limit('lq', NULL, NULL);
SELECT key, count(*) FILTER (WHERE parked) AS parked FROM pg_temp.jobs() GROUP BY key ORDER BY key;
SELECT count(*) AS claimed FROM (SELECT ck.claim('lq', 10)) AS c;
SELECT ck.set_concurrency_limit('lq', 'a', 1);
SELECT pg_temp.free('a') AS free_a_overfull;
SELECT count(ck.enqueue('lq', concurrency_key => 'a')) AS one_more;
SELECT count(*) AS completed FROM (SELECT ck.complete('lq', id, lease_token) FROM lq WHERE concurrency_key = 'a' AND lease_token IS NOT NULL ORDER BY id LIMIT 2) AS c;
SELECT pg_temp.free('a') AS free_a, count(*) FILTER (WHERE parked) AS parked FROM pg_temp.jobs() WHERE key = 'a';
SELECT ck.complete('lq', id, lease_token) FROM lq WHERE concurrency_key = 'a' AND lease_token IS NOT NULL;
SELECT pg_temp.free('a') AS free_a, count(*) FILTER (WHERE parked) AS parked FROM pg_temp.jobs() WHERE key = 'a';
DELETE FROM lq;

-- Unique keys and concurrency keys together: a duplicate takes no slot.
SELECT ck.set_concurrency_limit('lq', 'u', 1);
SELECT inserted FROM ck.enqueue_unique('lq', 'once', '{}', concurrency_key => 'u');
SELECT inserted FROM ck.enqueue_unique('lq', 'once', '{}', concurrency_key => 'u');
SELECT inserted FROM ck.enqueue_unique('lq', 'twice', '{}', concurrency_key => 'u');
SELECT * FROM pg_temp.jobs() WHERE key = 'u';
SELECT pg_temp.free('u') AS free_u;
DELETE FROM lq;
-- A duplicate while the key has a free slot returns the holder and gives back the slot it took.
SELECT ck.set_concurrency_limit('lq', 'u', 2);
SELECT ck.enqueue('lq', unique_key => 'held', concurrency_key => 'u') AS holder \gset
SELECT ck.enqueue('lq', unique_key => 'held', concurrency_key => 'u') = :holder AS same_job;
SELECT pg_temp.free('u') AS free_u;
DELETE FROM lq;
SELECT ck.set_concurrency_limit('lq', 'u', 1);
-- A rolled-back enqueue gives its slot back.
BEGIN;
SELECT ck.enqueue('lq', concurrency_key => 'u') > 0 AS enqueued;
ROLLBACK;
SELECT pg_temp.free('u') AS free_u;
-- A plain INSERT (a bulk load) takes slots or parks in the queue's trigger: a job beyond the limit is
-- parked by an update; one loaded parked already, at run_at 'infinity', is left as it is.
BEGIN;
SELECT n_tup_upd AS updated_before FROM pg_stat_xact_user_tables WHERE relid = 'lq'::regclass \gset
INSERT INTO lq (concurrency_key) VALUES ('u'), ('u');
INSERT INTO lq (concurrency_key, run_at, parked_run_at) VALUES ('u', 'infinity', now());
SELECT key, parked FROM pg_temp.jobs();
SELECT n_tup_upd - :updated_before AS updated FROM pg_stat_xact_user_tables WHERE relid = 'lq'::regclass;
COMMIT;
SELECT pg_temp.free('u') AS free_u;
DELETE FROM lq;

-- A user's UPDATE trigger on the queue sees the hand-over's update of the job it unparks, as it
-- would any statement's (the hand-over done in place leaves such a queue to the statement).
CREATE TABLE unparked (id bigint, ready boolean);
CREATE FUNCTION note_unparked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO unparked VALUES (NEW.id, NEW.run_at < 'infinity' AND NEW.parked_run_at IS NULL);
    RETURN NEW;
END $$;
CREATE TRIGGER note AFTER UPDATE ON lq FOR EACH ROW WHEN (OLD.parked_run_at IS NOT NULL) EXECUTE FUNCTION note_unparked();
SELECT count(ck.enqueue('lq', concurrency_key => 'u')) FROM generate_series(1, 2);
SELECT ck.complete('lq', id, lease_token) FROM ck.claim('lq');
SELECT u.ready, u.id = j.id AS the_parked_job FROM unparked AS u, lq AS j;
DROP TRIGGER note ON lq;
DROP FUNCTION note_unparked();
DROP TABLE unparked;
DELETE FROM lq;

-- A default set over keys that already hold jobs (counted for all keys in one pass since
-- 0.3.4): each key's free slots are the limit less its jobs not parked, negative when over it;
-- raised, each key unparks as many jobs as its room allows, oldest first.
INSERT INTO lq (payload, concurrency_key) SELECT '{}', k FROM unnest(ARRAY['p', 'q', 'q', 'q', 'r', 'r', 'r', 'r', 'r']) AS k;
SELECT ck.set_concurrency_limit('lq', NULL, 2);
SELECT count(ck.enqueue('lq', jsonb_build_object('n', g), concurrency_key => 'p')) FROM generate_series(1, 4) AS g;
SELECT key, count(*) FILTER (WHERE NOT parked) AS ready, count(*) FILTER (WHERE parked) AS parked, pg_temp.free(key) AS free
FROM pg_temp.jobs() GROUP BY key ORDER BY key;
SELECT ck.set_concurrency_limit('lq', NULL, 4);
SELECT key, count(*) FILTER (WHERE NOT parked) AS ready, count(*) FILTER (WHERE parked) AS parked, pg_temp.free(key) AS free
FROM pg_temp.jobs() GROUP BY key ORDER BY key;
SELECT payload->>'n' AS still_parked FROM lq WHERE run_at = 'infinity';
SELECT ck.set_concurrency_limit('lq', NULL, NULL);
SELECT count(*) AS slot_rows_left FROM ck.concurrency_slots WHERE queue = 'lq'::regclass AND concurrency_key IN ('p', 'q', 'r');
DELETE FROM lq;

-- Bad input, and only the owner sets limits.
SELECT test.outcome($$SELECT ck.set_concurrency_limit(NULL, 'a', 1)$$);
SELECT test.outcome($$SELECT ck.set_concurrency_limit('lq', 'a', -1)$$);
SELECT test.outcome($$SELECT ck.set_concurrency_limit('pg_class', 'a', 1)$$);
SELECT test.outcome($$SELECT ck.set_concurrency_limit(0, 'a', 1)$$);
CREATE ROLE regress_ck_limits;
SET ROLE regress_ck_limits;
SELECT ck.set_concurrency_limit('lq', 'a', 5);
RESET ROLE;
DROP ROLE regress_ck_limits;
SELECT ck.drop_queue('lq');
SELECT (SELECT count(*) FROM ck.concurrency_limits) AS limits_left, (SELECT count(*) FROM ck.concurrency_slots) AS slots_left;
