-- make bench, section dependencies: what completing a job costs as its number of dependants
-- grows (fan-out: one job with N dependants), and whether the completions of a fan-in (one job
-- waiting for 10,000) get slower as they go. One session; each figure is the mean of a loop
-- of calls timed with clock_timestamp(), each call in a transaction of its own (a worker's);
-- fan-out: 3 rounds, each on a queue of its own whose statements a first small job prepared.
-- Prints markdown table rows.
SET client_min_messages = warning;
CREATE TEMP TABLE fan_out (dependants int, complete_ms numeric, released int);
DO $$
DECLARE
    n int;
    r int;
    root bigint;
    c record;
    t0 timestamptz;
BEGIN
    FOREACH n IN ARRAY ARRAY[1, 100, 1000, 10000] LOOP
        FOR r IN 1..3 LOOP
            PERFORM ck.create_queue('bench_deps');
            -- a first job with a dependant prepares every statement of the new queue
            PERFORM ck.enqueue('bench_deps', after => ARRAY[ck.enqueue('bench_deps')]);
            PERFORM ck.complete('bench_deps', l.id, l.lease_token) FROM ck.claim('bench_deps', 2) AS l;
            PERFORM ck.complete('bench_deps', l.id, l.lease_token) FROM ck.claim('bench_deps', 2) AS l;
            COMMIT;   -- (a job enqueued in the transaction that claimed past it is claimable once it commits)
            root := ck.enqueue('bench_deps');
            PERFORM ck.enqueue('bench_deps', after => ARRAY[root]) FROM generate_series(1, n);
            SELECT * INTO c FROM ck.claim('bench_deps', 1);
            COMMIT;
            t0 := clock_timestamp();
            PERFORM ck.complete('bench_deps', c.id, c.lease_token);
            INSERT INTO fan_out SELECT n, extract(epoch FROM clock_timestamp() - t0) * 1000,
                                       count(*) FILTER (WHERE run_at <> 'infinity') FROM bench_deps;
            COMMIT;
            PERFORM ck.drop_queue('bench_deps');
            COMMIT;
        END LOOP;
    END LOOP;
END
$$;
SELECT format('| fan-out | %s | %s | %s |', to_char(dependants, 'FM999,999'), round(avg(complete_ms), 2), max(released))
FROM fan_out GROUP BY dependants ORDER BY dependants;

CREATE TEMP TABLE fan_in (part int, ms numeric);
DO $$
DECLARE
    c record;
    i int := 0;
    t0 timestamptz;
BEGIN
    PERFORM ck.create_queue('bench_deps');
    PERFORM ck.enqueue('bench_deps', after => (SELECT array_agg(ck.enqueue('bench_deps')) FROM generate_series(1, 10000)));
    CREATE TEMP TABLE leased AS SELECT * FROM ck.claim('bench_deps', 10000);
    COMMIT;
    FOR c IN SELECT * FROM leased ORDER BY id LOOP
        i := i + 1;
        t0 := clock_timestamp();
        PERFORM ck.complete('bench_deps', c.id, c.lease_token);
        INSERT INTO fan_in VALUES (i, extract(epoch FROM clock_timestamp() - t0) * 1000);
        COMMIT;
    END LOOP;
    IF (SELECT count(*) FROM ck.claim('bench_deps', 10)) <> 1 THEN
        RAISE EXCEPTION 'the sink was not ready after its 10,000 dependencies';
    END IF;
    PERFORM ck.drop_queue('bench_deps');
END
$$;
SELECT format('| fan-in, completions %s-%s of 10,000 | 1 | %s | |', min(part), max(part), round(avg(ms), 3))
FROM fan_in GROUP BY (part - 1) / 2500 ORDER BY min(part);
