-- Queue rate limits (1.1.0, issue 47): claims start at most max_jobs jobs of a key in any window
-- of length period, counting claims that commit; a job claimed over its key's rate is given back
-- unclaimed at the moment its key has room. The races are test/specs/queue_rate_race.spec.
SELECT ck.create_queue('rq', lease => '1 hour', max_attempts => 3) IS NOT NULL AS created;
CREATE FUNCTION pg_temp.jobs() RETURNS TABLE (n text, key text, attempts int, leased boolean, put_off interval)
LANGUAGE sql AS $$
    SELECT payload->>'n', concurrency_key, attempts, lease_token IS NOT NULL,
           CASE WHEN lease_token IS NULL AND run_at > clock_timestamp() + interval '1 minute'
                THEN pg_catalog.make_interval(mins => 30 * floor(extract(epoch FROM run_at - clock_timestamp()) / 1800)::int) END
    FROM rq ORDER BY id
$$;
-- A key's starts in the window, over its stripes (max_jobs / 8 each, one more for the first
-- max_jobs % 8; min(max_jobs, 8) of them).
CREATE FUNCTION pg_temp.starts() RETURNS TABLE (keyed boolean, key text, counted int, stripes int)
LANGUAGE sql AS $$
    SELECT keyed, concurrency_key, sum(total - marks[11])::int, count(*)::int FROM ck.rate_starts
    WHERE queue = 'rq'::regclass GROUP BY 1, 2 ORDER BY 1, 2
$$;
CREATE FUNCTION pg_temp.stripes(k text) RETURNS TABLE (stripe int, counted int)
LANGUAGE sql AS $$
    SELECT stripe, (total - marks[11])::int FROM ck.rate_starts WHERE queue = 'rq'::regclass AND concurrency_key = k ORDER BY 1
$$;

-- No limit: nothing counted.
SELECT ck.enqueue('rq', jsonb_build_object('n', 'free'), concurrency_key => 'a');
SELECT count(*) AS claimed FROM ck.claim('rq');
SELECT count(*) AS start_rows FROM ck.rate_starts;
DELETE FROM rq;

-- Key a: 2 an hour. One claim of 10 starts 2 of a's 5 jobs and the jobs without a key; a's three
-- others are back in the queue, unclaimed (attempts 0), put off to when a has room, 30 minutes
-- apart (an hour / 2) from an hour after the first start.
SELECT ck.set_rate_limit('rq', 'a', 2, '1 hour');
SELECT count(*) AS enqueued FROM (SELECT ck.enqueue('rq', jsonb_build_object('n', 'a' || g), concurrency_key => 'a') FROM generate_series(1, 5) AS g) AS e;
SELECT count(*) AS enqueued FROM (SELECT ck.enqueue('rq', jsonb_build_object('n', 'x' || g)) FROM generate_series(1, 2) AS g) AS e;
SELECT payload->>'n' AS claimed, attempts FROM ck.claim('rq', 10) ORDER BY id;
SELECT * FROM pg_temp.jobs();
SELECT * FROM pg_temp.starts();
-- nothing of a is claimable now; the put-off jobs are in the claim index's future
SELECT count(*) AS claimed FROM ck.claim('rq', 10);
SELECT ready, scheduled, running FROM ck.queue_stats('rq');

-- A claim that rolls back counts nothing: a's window freed by hand (its buckets moved 20 back),
-- a claim in a transaction that rolls back, then one that commits.
UPDATE ck.rate_starts SET bucket = bucket - 20, booked = NULL
WHERE queue = 'rq'::regclass AND concurrency_key = 'a';
UPDATE rq SET run_at = now() - interval '1 second' WHERE lease_token IS NULL;
BEGIN;
SELECT payload->>'n' AS claimed_then_rolled_back FROM ck.claim('rq', 10) ORDER BY id;
ROLLBACK;
SELECT * FROM pg_temp.starts();
SELECT payload->>'n' AS claimed FROM ck.claim('rq', 10) ORDER BY id;
SELECT * FROM pg_temp.jobs();

-- An expired lease: the job is claimed again, a new start, over a's rate now: given back, its
-- attempts as they were, its lease gone (the first holder's acknowledgement finds it lost).
SELECT id AS a3, lease_token AS a3_token FROM rq WHERE payload->>'n' = 'a3' \gset
UPDATE rq SET run_at = now() - interval '1 second' WHERE id = :a3;
SELECT count(*) AS claimed FROM ck.claim('rq', 10);
SELECT * FROM pg_temp.jobs() WHERE n = 'a3';
SELECT ck.try_complete('rq', :a3, :a3_token) AS first_holder_completes;

-- The default (NULL key): each key without a limit of its own has that rate, and the jobs without
-- a key together.
DELETE FROM rq;
SELECT ck.set_rate_limit('rq', NULL, 1, '1 hour');
SELECT count(*) AS enqueued FROM (SELECT ck.enqueue('rq', jsonb_build_object('n', k || g), concurrency_key => k)
FROM unnest(ARRAY['b', 'c']) AS k, generate_series(1, 2) AS g) AS e;
SELECT count(*) AS enqueued FROM (SELECT ck.enqueue('rq', jsonb_build_object('n', 'y' || g)) FROM generate_series(1, 2) AS g) AS e;
SELECT payload->>'n' AS claimed FROM ck.claim('rq', 10) ORDER BY id;
SELECT * FROM pg_temp.starts();
-- one job at a time: each claim gives back what is over, then claims again for the rest of its
-- batch; here nothing is left
SELECT count(*) AS claimed FROM ck.claim('rq', 1);
SELECT count(*) FILTER (WHERE put_off IS NOT NULL) AS put_off FROM pg_temp.jobs();

-- A hot key, 20 an hour: 8 stripes, shares 3, 3, 3, 3, 2, 2, 2, 2. Claims one at a time fill the
-- lowest stripe with room first; a full stripe does not refuse a start while another has room (the
-- fourth goes to stripe 1). One claim of 30 then counts up to the sum, exactly 20 in the
-- window over all stripes, each at its share, and puts the other 15 off (20 a period: each stripe
-- books its own jobs period / share apart, so they come due at the key's rate).
DELETE FROM rq;
SELECT ck.set_rate_limit('rq', 'h', 20, '1 hour');
SELECT count(*) AS enqueued FROM (SELECT ck.enqueue('rq', jsonb_build_object('n', 'h' || g), concurrency_key => 'h') FROM generate_series(1, 35) AS g) AS e;
DO $$ BEGIN FOR i IN 1 .. 4 LOOP PERFORM ck.claim('rq', 1); END LOOP; END $$;
SELECT * FROM pg_temp.stripes('h');
SELECT count(*) AS claimed FROM ck.claim('rq', 30);
SELECT * FROM pg_temp.stripes('h');
SELECT * FROM pg_temp.starts() WHERE key = 'h';
SELECT count(*) FILTER (WHERE leased) AS leased, count(*) FILTER (WHERE put_off IS NOT NULL) AS put_off,
       count(*) FILTER (WHERE put_off <= interval '1 hour') AS due_in_the_first_hour FROM pg_temp.jobs() WHERE key = 'h';
SELECT count(*) AS claimed FROM ck.claim('rq', 30);
SELECT ck.set_rate_limit('rq', 'h', NULL);
-- A limit raised (2 -> 4): the key's stripes are made as they are needed.
DELETE FROM rq;
SELECT ck.set_rate_limit('rq', 'g', 2, '1 hour');
SELECT count(*) AS enqueued FROM (SELECT ck.enqueue('rq', jsonb_build_object('n', 'g' || g), concurrency_key => 'g') FROM generate_series(1, 6) AS g) AS e;
SELECT count(*) AS claimed FROM ck.claim('rq', 6);
SELECT * FROM pg_temp.starts() WHERE key = 'g';
SELECT ck.set_rate_limit('rq', 'g', 4, '1 hour');
UPDATE rq SET run_at = now() - interval '1 second' WHERE lease_token IS NULL;
SELECT count(*) AS claimed FROM ck.claim('rq', 6);
SELECT * FROM pg_temp.stripes('g');
SELECT ck.set_rate_limit('rq', 'g', NULL);

-- A claim's rounds count keys' rows in key order: a later round that meets a key below one it
-- already counted gives that job back where it was, uncounted (no waiting for rows out of order,
-- so no deadlock between two claims), and ends the call; the next claim takes it.
DELETE FROM rq;
SELECT ck.set_rate_limit('rq', 'm', 1, '1 hour');
SELECT ck.set_rate_limit('rq', 'l', 1, '1 hour');
SELECT count(*) AS enqueued FROM (SELECT ck.enqueue('rq', jsonb_build_object('n', k), concurrency_key => left(k, 1))
FROM unnest(ARRAY['m1', 'm2', 'l1']) AS k) AS e;
SELECT payload->>'n' AS claimed FROM ck.claim('rq', 2);
SELECT * FROM pg_temp.jobs();
SELECT payload->>'n' AS next_claim FROM ck.claim('rq', 2);
SELECT ck.set_rate_limit('rq', k, NULL) FROM unnest(ARRAY['l', 'm']) AS k;

-- A limit removed: claims count nothing more, the counts of keys left without a limit go (jobs
-- already put off keep their time).
SELECT ck.set_rate_limit('rq', NULL, NULL);
SELECT ck.set_rate_limit('rq', 'a', NULL);
SELECT count(*) AS limits FROM ck.rate_limits WHERE queue = 'rq'::regclass;
SELECT ck.enqueue('rq', jsonb_build_object('n', 'z'));
SELECT payload->>'n' AS claimed FROM ck.claim('rq', 10);
SELECT sum(counted) AS counted_in_all FROM pg_temp.starts();

-- A worker needs what it needs today (SELECT, UPDATE, DELETE on the queue): its claims count, and
-- it sees the counts of its queues only.
SELECT ck.set_rate_limit('rq', 'w', 1, '1 hour');
SELECT ck.create_queue('rq_other') IS NOT NULL AS created;
SELECT ck.set_rate_limit('rq_other', 'w', 1, '1 hour');
SELECT ck.enqueue('rq_other', '{}', concurrency_key => 'w');
SELECT count(*) AS claimed_other FROM ck.claim('rq_other');
SELECT count(*) AS enqueued FROM (SELECT ck.enqueue('rq', jsonb_build_object('n', 'w' || g), concurrency_key => 'w') FROM generate_series(1, 2) AS g) AS e;
CREATE ROLE regress_ck_rate_worker;
GRANT SELECT, UPDATE, DELETE ON rq TO regress_ck_rate_worker;
SET ROLE regress_ck_rate_worker;
SELECT payload->>'n' AS worker_claimed FROM ck.claim('rq', 10);
SELECT queue, keyed, concurrency_key, stripe FROM ck.rate_starts ORDER BY 1::text, 2, 3, 4;
\set VERBOSITY terse
SELECT ck.set_rate_limit('rq', 'w', 5, '1 hour');
\set VERBOSITY default
RESET ROLE;
REVOKE ALL ON rq FROM regress_ck_rate_worker;
DROP ROLE regress_ck_rate_worker;

-- Bad input: a clear error, nothing changed.
SELECT test.outcome($$SELECT ck.set_rate_limit(NULL, 'a', 1, '1 hour')$$);
SELECT test.outcome($$SELECT ck.set_rate_limit(0, 'a', 1, '1 hour')$$);
SELECT test.outcome($$SELECT ck.set_rate_limit('pg_class', 'a', 1, '1 hour')$$);
SELECT test.outcome($$SELECT ck.set_rate_limit('rq', 'a', 0, '1 hour')$$);
SELECT test.outcome($$SELECT ck.set_rate_limit('rq', 'a', -1, '1 hour')$$);
SELECT test.outcome($$SELECT ck.set_rate_limit('rq', 'a', 1, NULL)$$);
SELECT test.outcome($$SELECT ck.set_rate_limit('rq', 'a', 1)$$);
SELECT test.outcome($$SELECT ck.set_rate_limit('rq', 'a', 1, '0')$$);
SELECT test.outcome($$SELECT ck.set_rate_limit('rq', 'a', 1, '-1 minute')$$);
SELECT test.outcome($$SELECT ck.set_rate_limit('rq', 'a', 1, '101 years')$$);
SELECT count(*) AS limits FROM ck.rate_limits WHERE queue = 'rq'::regclass;

-- Citus: a distributed queue takes no rate limit, and a queue with one is not distributed (0A000;
-- the registration ck.distribute_queue writes, made here by hand).
SELECT test.outcome($$INSERT INTO ck.distributed_queues (queue, parts, shards) VALUES ('rq_other', '{1}', '{public.rq_other_1}')$$);
SELECT ck.set_rate_limit('rq_other', 'w', NULL);
INSERT INTO ck.distributed_queues (queue, parts, shards) VALUES ('rq_other', '{1}', '{public.rq_other_1}');
SELECT test.outcome($$SELECT ck.set_rate_limit('rq_other', 'w', 1, '1 hour')$$);
DELETE FROM ck.distributed_queues;

-- Labels.
SELECT p.oid::regprocedure, p.provolatile, p.proparallel, p.prosecdef, p.proconfig
FROM pg_proc AS p WHERE p.oid = 'ck.set_rate_limit'::regproc;

-- ck.drop_queue takes the queue's limits and counts with it.
SELECT ck.drop_queue('rq');
SELECT ck.drop_queue('rq_other');
SELECT (SELECT count(*) FROM ck.rate_limits) AS limits_left, (SELECT count(*) FROM ck.rate_starts) AS starts_left;
