-- Memory over long runs (test/chaos/faults_memory.py): one procedure per function family makes
-- `calls` calls in one backend, committing every `per` calls, checks every answer, and samples
-- the backend's memory after the first transaction, after `warm` calls (the end of the warm-up)
-- and after the last call, always at the same point of the loop (after the per-th call of a
-- transaction, before its COMMIT):
--   context_bytes  the sum of pg_backend_memory_contexts.total_bytes, except the procedure's own
--                  SPI context ("SPI Proc" under PortalContext): PostgreSQL 15 lets that one grow
--                  with the COMMITs of a procedure that ran DML in between, with or without the
--                  extension (mem_baseline, a plain UPDATE in the same loop, shows it) -- sampled
--                  separately as proc_bytes;
--   vmdata_kb      VmData from /proc/self/status (superuser only; NULL otherwise): memory malloc'ed
--                  outside the contexts (a C++ leak would show here).
CREATE EXTENSION concurrency_kit;

CREATE TABLE mem_samples (family text, calls bigint, context_bytes bigint, proc_bytes bigint, vmdata_kb bigint,
                          at timestamptz);
CREATE TABLE mem_checked (family text PRIMARY KEY, calls bigint, checked bigint);

-- The backend's memory contexts with their parents' names: pg_backend_memory_contexts has a parent
-- column up to 17; from 18 each context's path of ids instead, whose next-to-last is the parent.
-- Read as jsonb, the one query serves both.
CREATE FUNCTION mem_contexts(OUT name text, OUT parent text, OUT total_bytes bigint) RETURNS SETOF record
LANGUAGE sql AS $$
    WITH c AS (SELECT to_jsonb(m) AS j FROM pg_backend_memory_contexts AS m)
    SELECT c.j ->> 'name', coalesce(c.j ->> 'parent', p.j ->> 'name'), (c.j ->> 'total_bytes')::bigint
    FROM c LEFT JOIN c AS p
        ON c.j ? 'path' AND p.j -> 'path' = (c.j -> 'path') - (jsonb_array_length(c.j -> 'path') - 1)
$$;

CREATE FUNCTION mem_sample(family text, calls bigint) RETURNS void LANGUAGE sql AS $$
    INSERT INTO mem_samples
    SELECT family, calls,
           sum(total_bytes) FILTER (WHERE NOT (name = 'SPI Proc' AND parent = 'PortalContext')),
           sum(total_bytes) FILTER (WHERE name = 'SPI Proc' AND parent = 'PortalContext'),
           CASE WHEN (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
                THEN (regexp_match(pg_read_file('/proc/self/status'), 'VmData:\s+(\d+) kB'))[1]::bigint END,
           clock_timestamp()
    FROM mem_contexts()
$$;

-- queue: ck.claim + ck.complete. Each transaction enqueues its own jobs with a priority lower than
-- any before, so that a claim finds them at the head of its index and never walks over the entries
-- of jobs completed earlier (test/bench/queue_memory.sql); 10,000 jobs never claimed give the table
-- a realistic size when the claim is planned.
SELECT FROM ck.create_queue('mem_q');
INSERT INTO mem_q (payload, priority) SELECT '{"n": 0}', 1 FROM generate_series(1, 10000);

CREATE PROCEDURE mem_queue(calls int, warm int, per int) LANGUAGE plpgsql AS $$
DECLARE
    job record;
    checked bigint := 0;
BEGIN
    FOR i IN 1..calls LOOP
        IF i % per = 1 OR per = 1 THEN
            INSERT INTO mem_q (payload, priority) SELECT '{"n": 0}', -i FROM generate_series(1, per);
        END IF;
        SELECT c.id, c.lease_token INTO STRICT job FROM ck.claim('mem_q') AS c;
        IF NOT ck.complete('mem_q', job.id, job.lease_token) THEN
            RAISE 'queue: job % not completed', job.id;
        END IF;
        checked := checked + 2;
        IF i % per = 0 THEN
            IF i = per OR i = warm OR i = calls THEN
                PERFORM mem_sample('queue', i);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
    INSERT INTO mem_checked VALUES ('queue', calls, checked);
END
$$;

-- complete_and_claim: the worker's loop in one call, on a queue of its own fed the same way.
SELECT FROM ck.create_queue('mem_cac');
INSERT INTO mem_cac (payload, priority) SELECT '{"n": 0}', 1 FROM generate_series(1, 10000);

CREATE PROCEDURE mem_complete_and_claim(calls int, warm int, per int) LANGUAGE plpgsql AS $$
DECLARE
    job record;
    checked bigint := 0;
BEGIN
    INSERT INTO mem_cac (payload, priority) SELECT '{"n": 0}', -1 FROM generate_series(1, per + 1);
    SELECT c.id, c.lease_token INTO STRICT job FROM ck.claim('mem_cac') AS c;
    FOR i IN 1..calls LOOP
        IF i % per = 1 OR per = 1 THEN
            INSERT INTO mem_cac (payload, priority) SELECT '{"n": 0}', -i - 1 FROM generate_series(1, per);
        END IF;
        SELECT c.id, c.lease_token INTO STRICT job FROM ck.complete_and_claim('mem_cac', job.id, job.lease_token) AS c;
        checked := checked + 1;
        IF i % per = 0 THEN
            IF i = per OR i = warm OR i = calls THEN
                PERFORM mem_sample('complete_and_claim', i);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
    INSERT INTO mem_checked VALUES ('complete_and_claim', calls, checked);
END
$$;

-- claim_wait on an empty queue: every other call sleeps 1 ms (the wait), the others give up at
-- once (prepare to wait, look, cancel).
SELECT FROM ck.create_queue('mem_empty');

CREATE PROCEDURE mem_claim_wait(calls int, warm int, per int) LANGUAGE plpgsql AS $$
DECLARE
    n int;
    checked bigint := 0;
BEGIN
    FOR i IN 1..calls LOOP
        SELECT count(*) INTO n FROM ck.claim_wait('mem_empty', 1, '30 seconds',
                                                   CASE WHEN i % 2 = 0 THEN interval '1 ms' ELSE interval '1 microsecond' END);
        IF n <> 0 THEN
            RAISE 'claim_wait: % jobs from an empty queue', n;
        END IF;
        checked := checked + 1;
        IF i % per = 0 THEN
            IF i = per OR i = warm OR i = calls THEN
                PERFORM mem_sample('claim_wait', i);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
    INSERT INTO mem_checked VALUES ('claim_wait', calls, checked);
END
$$;

-- try_decrement: 1,000 rows with plenty, and row 0 with nothing (the NULL answer).
CREATE TABLE mem_stock (sku int PRIMARY KEY, qty bigint NOT NULL);
INSERT INTO mem_stock SELECT g, CASE WHEN g = 0 THEN 0 ELSE 1000000000000 END FROM generate_series(0, 1000) AS g;

CREATE PROCEDURE mem_try_decrement(calls int, warm int, per int) LANGUAGE plpgsql AS $$
DECLARE
    k int;
    left_after numeric;
    checked bigint := 0;
BEGIN
    FOR i IN 1..calls LOOP
        k := i % 1001;
        left_after := ck.try_decrement('mem_stock', k, 'qty', 1);
        IF (k = 0) <> (left_after IS NULL) THEN
            RAISE 'try_decrement: key % gave %', k, left_after;
        END IF;
        checked := checked + 1;
        IF i % per = 0 THEN
            IF i = per OR i = warm OR i = calls THEN
                PERFORM mem_sample('try_decrement', i);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
    INSERT INTO mem_checked VALUES ('try_decrement', calls, checked);
END
$$;

-- transition: 1,000 seats flipped a -> b in one block of 1,000 calls and back in the next; every
-- tenth call also asks for a transition of seat 0, which is in neither state (false).
CREATE TABLE mem_seats (id int PRIMARY KEY, state text NOT NULL);
INSERT INTO mem_seats SELECT g, CASE WHEN g = 0 THEN 'z' ELSE 'a' END FROM generate_series(0, 1000) AS g;

CREATE PROCEDURE mem_transition(calls int, warm int, per int) LANGUAGE plpgsql AS $$
DECLARE
    forward boolean;
    checked bigint := 0;
BEGIN
    FOR i IN 1..calls LOOP
        forward := ((i - 1) / 1000) % 2 = 0;
        IF NOT ck.try_transition('mem_seats', i % 1000 + 1, 'state', CASE WHEN forward THEN 'a' ELSE 'b' END,
                             CASE WHEN forward THEN 'b' ELSE 'a' END) THEN
            RAISE 'transition: seat % refused at call %', i % 1000 + 1, i;
        END IF;
        checked := checked + 1;
        IF i % 10 = 0 THEN
            IF ck.try_transition('mem_seats', 0, 'state', 'a', 'b') THEN
                RAISE 'transition: seat 0 is not in state a';
            END IF;
            checked := checked + 1;
        END IF;
        IF i % per = 0 THEN
            IF i = per OR i = warm OR i = calls THEN
                PERFORM mem_sample('transition', i);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
    INSERT INTO mem_checked VALUES ('transition', calls, checked);
END
$$;

-- xact_lock by name: four namespaces, 100 keys each, released at each COMMIT.
SELECT ck.lock_namespace('mem-' || g) FROM generate_series(0, 3) AS g;

CREATE PROCEDURE mem_xact_lock_name(calls int, warm int, per int) LANGUAGE plpgsql AS $$
DECLARE
    names constant text[] := '{mem-0,mem-1,mem-2,mem-3}';
    checked bigint := 0;
BEGIN
    FOR i IN 1..calls LOOP
        PERFORM ck.xact_lock(names[i % 4 + 1], (i / 4) % 100);   -- 400 distinct locks in 400 calls
        checked := checked + 1;
        IF i % per = 0 THEN
            IF (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND granted)
               <> least(per, 400) THEN
                RAISE 'xact_lock by name: % advisory locks held, % expected',
                    (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'), least(per, 400);
            END IF;
            checked := checked + 1;
            IF i = per OR i = warm OR i = calls THEN
                PERFORM mem_sample('xact_lock by name', i);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
    INSERT INTO mem_checked VALUES ('xact_lock by name', calls, checked);
END
$$;

CREATE PROCEDURE mem_xact_lock_number(calls int, warm int, per int) LANGUAGE plpgsql AS $$
DECLARE
    ns constant int := ck.lock_namespace('mem-number');   -- not one the by-name family locks: they run side by side
    checked bigint := 0;
BEGIN
    FOR i IN 1..calls LOOP
        PERFORM ck.xact_lock(ns, i % 100);
        checked := checked + 1;
        IF i % per = 0 THEN
            IF (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND granted)
               <> least(per, 100) THEN
                RAISE 'xact_lock by number: wrong number of advisory locks held';
            END IF;
            checked := checked + 1;
            IF i = per OR i = warm OR i = calls THEN
                PERFORM mem_sample('xact_lock by number', i);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
    INSERT INTO mem_checked VALUES ('xact_lock by number', calls, checked);
END
$$;

CREATE PROCEDURE mem_sqlstate_action(calls int, warm int, per int) LANGUAGE plpgsql AS $$
DECLARE
    codes constant text[] := '{40001,40P01,55P03,23505,23P01,CK001,CK005,XX000,22023,57014}';
    answers constant text[] := '{retry,retry,busy,conflict,conflict,conflict,conflict,error,error,error}';
    checked bigint := 0;
BEGIN
    FOR i IN 1..calls LOOP
        IF ck.sqlstate_action(codes[i % 10 + 1]) <> answers[i % 10 + 1] THEN
            RAISE 'sqlstate_action(%) is not %', codes[i % 10 + 1], answers[i % 10 + 1];
        END IF;
        checked := checked + 1;
        IF i % per = 0 THEN
            IF i = per OR i = warm OR i = calls THEN
                PERFORM mem_sample('sqlstate_action', i);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
    INSERT INTO mem_checked VALUES ('sqlstate_action', calls, checked);
END
$$;

-- find_overlaps: 200 bookings in 10 rooms, two overlapping pairs.
CREATE TABLE mem_bookings (id int PRIMARY KEY, room int NOT NULL, during tstzrange NOT NULL);
INSERT INTO mem_bookings
SELECT g, g % 10, tstzrange('2026-01-01'::timestamptz + g * interval '1 day', '2026-01-01'::timestamptz + g * interval '1 day' + interval '1 hour')
FROM generate_series(1, 200) AS g;
INSERT INTO mem_bookings VALUES (1001, 1, tstzrange('2026-01-02 00:30', '2026-01-02 02:00')),
                                (1002, 2, tstzrange('2026-01-03 00:10', '2026-01-03 00:20'));
ANALYZE;

CREATE PROCEDURE mem_find_overlaps(calls int, warm int, per int) LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    checked bigint := 0;
BEGIN
    FOR i IN 1..calls LOOP
        SELECT count(*) INTO n FROM ck.find_overlaps('mem_bookings', 'during', '{room}');
        IF n <> 2 THEN
            RAISE 'find_overlaps found % pairs, not 2', n;
        END IF;
        checked := checked + 1;
        IF i % per = 0 THEN
            IF i = per OR i = warm OR i = calls THEN
                PERFORM mem_sample('find_overlaps', i);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
    INSERT INTO mem_checked VALUES ('find_overlaps', calls, checked);
END
$$;

-- The baseline: the try_decrement loop with the hand-written UPDATE instead (no extension call).
CREATE PROCEDURE mem_baseline(calls int, warm int, per int) LANGUAGE plpgsql AS $$
DECLARE
    k int;
    checked bigint := 0;
BEGIN
    FOR i IN 1..calls LOOP
        k := i % 1001;
        UPDATE mem_stock SET qty = qty - 1 WHERE sku = k AND qty >= 1;
        IF (k = 0) = FOUND THEN
            RAISE 'baseline: key % gave %', k, FOUND;
        END IF;
        checked := checked + 1;
        IF i % per = 0 THEN
            IF i = per OR i = warm OR i = calls THEN
                PERFORM mem_sample('baseline', i);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
    INSERT INTO mem_checked VALUES ('baseline', calls, checked);
END
$$;

-- The race detector on ('log', its messages kept out of the server log): each call records an
-- unlocked read, runs an overwrite the planner checked (its row unchanged since: not lost), and
-- makes one report by hand (a transaction id not yet begun), through the key's description and
-- the shared ring of reports; the ring then holds its latest 128.
CREATE TABLE mem_race (id int PRIMARY KEY, qty bigint NOT NULL);
INSERT INTO mem_race SELECT g, 0 FROM generate_series(0, 1000) AS g;
CREATE PROCEDURE mem_race_detector(calls int, warm int, per int) LANGUAGE plpgsql AS $$
DECLARE
    k int;
    v bigint;
    checked bigint := 0;
BEGIN
    PERFORM set_config('log_min_messages', 'panic', false);
    PERFORM set_config('ck.race_detector', 'log', false);
    PERFORM ck.race_reports_reset();
    FOR i IN 1..calls LOOP
        k := i % 1001;
        SELECT qty INTO v FROM mem_race WHERE id = k;
        UPDATE mem_race SET qty = v + 1 WHERE id = k;
        IF NOT ck_internal.race_check('mem_race', (pg_current_xact_id()::text::bigint % 4294967296 + 1000)::text::xid,
                                      (SELECT ctid FROM mem_race WHERE id = k), 'mem', 'qty') THEN
            RAISE 'race_check: key % gave false', k;
        END IF;
        checked := checked + 1;
        IF i % per = 0 THEN
            IF i = per OR i = warm OR i = calls THEN
                PERFORM mem_sample('race_detector', i);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
    IF (SELECT count(*) FROM ck.race_reports() WHERE table_name = 'public.mem_race' AND row_key LIKE '(id)=(%)')
       <> least(calls, 128) THEN
        RAISE 'race_detector: % reports kept', (SELECT count(*) FROM ck.race_reports());
    END IF;
    IF (SELECT sum(qty) FROM mem_race) <> calls THEN
        RAISE 'race_detector: % increments made of %', (SELECT sum(qty) FROM mem_race), calls;
    END IF;
    PERFORM set_config('ck.race_detector', 'off', false);
    INSERT INTO mem_checked VALUES ('race_detector', calls, checked);
END
$$;
