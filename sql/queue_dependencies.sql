-- Dependencies (0.3.1): ck.enqueue(..., after) waits until every listed job still in the queue
-- has completed; a buried or cancelled one buries its dependants, with the reason. The races
-- are test/specs/queue_dependencies_race.spec.
SELECT ck.create_queue('depq', lease => '1 hour', max_attempts => 1) IS NOT NULL AS created;
CREATE FUNCTION pg_temp.jobs() RETURNS TABLE (id bigint, waiting boolean, waiting_for integer, has_dependants boolean)
LANGUAGE sql AS $$
    SELECT id, run_at = 'infinity', waiting_for, has_dependants FROM depq ORDER BY id
$$;
-- Claims (one ck.claim of up to n jobs, each statement its own transaction) and completes.
CREATE FUNCTION pg_temp.done(n integer) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    r record;
    out bigint[] := '{}';
BEGIN
    FOR r IN SELECT * FROM ck.claim('depq', n) LOOP
        PERFORM ck.complete('depq', r.id, r.lease_token);
        out := out || r.id;
    END LOOP;
    RETURN out;
END
$$;

-- Claims and completes until two claims in a row come back empty (a claim that comes back
-- empty may have released dependants, claimable once its statement commits): how many ran.
CREATE PROCEDURE pg_temp.drain(INOUT drained bigint DEFAULT 0) LANGUAGE plpgsql AS $$
DECLARE
    empty int := 0;
    n int;
BEGIN
    WHILE empty < 2 LOOP
        n := cardinality(pg_temp.done(1000));
        COMMIT;
        drained := drained + n;
        empty := CASE WHEN n = 0 THEN empty + 1 ELSE 0 END;
    END LOOP;
END
$$;

-- Job 3 waits for 1 and 2: parked, counted, edges recorded, 1 and 2 marked.
SELECT ck.enqueue('depq', '{"n": 1}'), ck.enqueue('depq', '{"n": 2}');
SELECT ck.enqueue('depq', '{"n": 3}', after => ARRAY[2, 1, 2]);
SELECT * FROM pg_temp.jobs();
SELECT job, dependant FROM ck.job_dependencies WHERE queue = 'depq'::regclass ORDER BY job;
-- A claim takes 1 and 2, never 3; completing 1 counts 3 down, completing 2 makes it ready.
SELECT pg_temp.done(1) AS completed;
SELECT * FROM pg_temp.jobs();
SELECT pg_temp.done(10) AS completed;
SELECT * FROM pg_temp.jobs();
SELECT count(*) AS edges_left FROM ck.job_dependencies WHERE queue = 'depq'::regclass;
SELECT count(*) AS departures_left FROM ck.dependency_departures WHERE queue = 'depq'::regclass;
SELECT pg_temp.done(10) AS completed;
-- Jobs that are no longer in the queue (completed, or never there) are nothing to wait for.
SELECT ck.enqueue('depq', '{"n": 4}', after => ARRAY[1, 2, 999999]) AS ready_at_once \gset
SELECT * FROM pg_temp.jobs();
SELECT pg_temp.done(10) AS completed;

-- A cancelled dependency buries its dependants, and theirs, with the reason.
SELECT ck.enqueue('depq', '{"n": 5}') AS a \gset
SELECT ck.enqueue('depq', '{"n": 6}', after => ARRAY[:a]) AS b \gset
SELECT ck.enqueue('depq', '{"n": 7}', after => ARRAY[:b]) AS c \gset
SELECT ck.cancel('depq', :a);
SELECT id - :a AS job, last_error FROM depq_dead WHERE id >= :a ORDER BY id;
SELECT count(*) AS left_in_queue FROM depq;
-- A job enqueued after a dead dependency goes to the dead letters at once (its id is returned).
SELECT ck.enqueue('depq', '{"n": 8}', after => ARRAY[:a]) AS d \gset
SELECT id - :a AS job, last_error FROM depq_dead WHERE id = :d;
-- A failure on the last attempt buries the dependants too.
SELECT ck.enqueue('depq', '{"n": 9}') AS e \gset
SELECT ck.enqueue('depq', '{"n": 10}', after => ARRAY[:e]) AS f \gset
SELECT ck.fail('depq', id, lease_token, 'boom') FROM ck.claim('depq', 1);
SELECT id - :e AS job, last_error FROM depq_dead WHERE id IN (:e, :f) ORDER BY id;
-- A dead dependant brought back with ck.retry_dead waits for nothing any more.
SELECT ck.retry_dead('depq', :f);
SELECT * FROM pg_temp.jobs();
SELECT pg_temp.done(10) = ARRAY[:f]::bigint[] AS retried_one_ran;

-- Fan-out: 600 jobs wait for one. Completing it resolves one batch (256) at once; the rest
-- follows as claims come back empty, a batch each (claimable once that claim commits), so
-- completing the job costs the same whatever the number of its dependants.
SELECT ck.enqueue('depq', '{"root": true}') AS root \gset
SELECT count(ck.enqueue('depq', jsonb_build_object('leaf', g), after => ARRAY[:root])) FROM generate_series(1, 600) AS g;
SELECT pg_temp.done(1) = ARRAY[:root]::bigint[] AS root_completed;
SELECT count(*) FILTER (WHERE NOT waiting) AS ready, count(*) FILTER (WHERE waiting) AS still_waiting FROM pg_temp.jobs();
SELECT cardinality(pg_temp.done(1000)) AS claimed;
SELECT cardinality(pg_temp.done(1000)) AS claimed;
SELECT cardinality(pg_temp.done(1000)) AS claimed;
SELECT cardinality(pg_temp.done(1000)) AS claimed;
SELECT cardinality(pg_temp.done(1000)) AS claimed;
CALL pg_temp.drain();
SELECT count(*) AS left_in_queue FROM depq;
SELECT count(*) AS edges_left FROM ck.job_dependencies WHERE queue = 'depq'::regclass;
SELECT count(*) AS departures_left FROM ck.dependency_departures WHERE queue = 'depq'::regclass;

-- A busy queue never comes back empty: every 64th claim of a backend resolves a batch as well.
SELECT ck.enqueue('depq', '{"root": 2}') AS root2 \gset
SELECT count(ck.enqueue('depq', jsonb_build_object('leaf', g), after => ARRAY[:root2])) FROM generate_series(1, 300) AS g;
SELECT pg_temp.done(1) = ARRAY[:root2]::bigint[] AS root_completed;
SELECT count(ck.enqueue('depq', '{"other": true}')) FROM generate_series(1, 200);
SELECT count(*) FILTER (WHERE waiting) AS still_waiting FROM pg_temp.jobs();
SELECT sum(cardinality(pg_temp.done(1))) AS claimed_one_by_one FROM generate_series(1, 64);
SELECT count(*) FILTER (WHERE waiting) AS still_waiting FROM pg_temp.jobs();
CALL pg_temp.drain();

-- Fan-in: one job waits for 300; it is ready when the last of them completes.
CREATE TEMP TABLE parts AS SELECT ck.enqueue('depq', jsonb_build_object('part', g)) AS id FROM generate_series(1, 300) AS g;
SELECT ck.enqueue('depq', '{"sink": true}', after => (SELECT array_agg(id) FROM parts)) AS sink \gset
SELECT waiting_for FROM depq WHERE id = :sink;
SELECT count(*) AS claimed FROM (SELECT unnest(pg_temp.done(299))) AS c;
SELECT waiting, waiting_for FROM pg_temp.jobs() WHERE id = :sink;
SELECT pg_temp.done(1000) = (SELECT array_agg(id) FROM parts WHERE id IN (SELECT id FROM depq)) AS last_part;
SELECT waiting, waiting_for FROM pg_temp.jobs() WHERE id = :sink;
SELECT pg_temp.done(10) = ARRAY[:sink]::bigint[] AS sink_ran;

-- With a concurrency key: the job takes no slot while it waits, and gets one (or waits for one)
-- once its dependencies are done.
SELECT ck.set_concurrency_limit('depq', 'k', 1);
SELECT ck.enqueue('depq', '{"k": 1}', concurrency_key => 'k') AS k1 \gset
SELECT ck.enqueue('depq', '{"dep": true}') AS dep \gset
SELECT ck.enqueue('depq', '{"k": 2}', concurrency_key => 'k', after => ARRAY[:dep]) AS k2 \gset
SELECT free FROM ck.concurrency_slots WHERE queue = 'depq'::regclass AND concurrency_key = 'k';
-- The dependency completes first (its claim takes k1 too): k2's key is full, so it stays parked.
CREATE TEMP TABLE leased AS SELECT id, lease_token FROM ck.claim('depq', 10);
SELECT array_agg(id - :k1 ORDER BY id) AS claimed FROM leased;
SELECT ck.complete('depq', id, lease_token) FROM leased WHERE id = :dep;
SELECT waiting, waiting_for FROM pg_temp.jobs() WHERE id = :k2;
-- k1 leaves: the slot goes to k2.
SELECT ck.complete('depq', id, lease_token) FROM leased WHERE id = :k1;
SELECT waiting, waiting_for FROM pg_temp.jobs() WHERE id = :k2;
SELECT pg_temp.done(10) = ARRAY[:k2]::bigint[] AS k2_ran;
-- A parked dependant of a full key is not the key's to move when the limit is raised.
SELECT ck.enqueue('depq', '{"dep": 2}') AS dep2 \gset
SELECT ck.enqueue('depq', '{"k": 3}', concurrency_key => 'k', after => ARRAY[:dep2]) AS k3 \gset
SELECT ck.set_concurrency_limit('depq', 'k', NULL);
SELECT waiting, waiting_for FROM pg_temp.jobs() WHERE id = :k3;
SELECT pg_temp.done(10) = ARRAY[:dep2]::bigint[] AS dep2_ran;
SELECT pg_temp.done(10) = ARRAY[:k3]::bigint[] AS k3_ran;

-- With a unique key: a duplicate returns the waiting job and records nothing more.
SELECT ck.enqueue('depq', '{"dep": 3}') AS dep3 \gset
SELECT ck.enqueue('depq', '{"u": 1}', unique_key => 'u', after => ARRAY[:dep3]) = ck.enqueue('depq', unique_key => 'u', after => ARRAY[:dep3]) AS same_job;
SELECT count(*) AS edges FROM ck.job_dependencies WHERE queue = 'depq'::regclass AND job = :dep3;
SELECT pg_temp.done(10) = ARRAY[:dep3]::bigint[] AS dep3_ran;
SELECT (SELECT payload FROM depq WHERE unique_key = 'u') = '{"u": 1}' AS ready_with_key, count(*) AS jobs FROM pg_temp.jobs() WHERE NOT waiting;
SELECT count(*) FROM (SELECT unnest(pg_temp.done(10))) AS c;

-- Bad input: nothing enqueued.
SELECT ck.enqueue('depq', after => ARRAY[1, NULL]);
SELECT ck.enqueue('depq', after => ARRAY[0]);
SELECT ck.enqueue('depq', after => ARRAY[-5]);
SELECT ck.enqueue('depq', after => (SELECT array_agg(g) FROM generate_series(1, 100001) AS g));
SELECT ck.enqueue('depq', after => '{}') > 0 AS enqueued;   -- an empty list: nothing to wait for
SELECT count(*) AS jobs FROM depq;
SELECT count(*) FROM (SELECT unnest(pg_temp.done(10))) AS c;

-- ck.drop_queue clears the queue's rows of both tables.
SELECT ck.enqueue('depq', '{"dep": 4}') AS dep4 \gset
SELECT ck.enqueue('depq', after => ARRAY[:dep4]) IS NOT NULL AS waiting_job;
SELECT ck.drop_queue('depq');
SELECT count(*) AS edges FROM ck.job_dependencies;
SELECT count(*) AS departures FROM ck.dependency_departures;
