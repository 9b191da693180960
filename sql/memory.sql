-- Nothing grows per call: many failing and succeeding calls in one backend leave its
-- memory contexts and its heap (C++ allocations included) where they were.
CREATE TABLE mem (id int PRIMARY KEY, qty bigint NOT NULL);
INSERT INTO mem SELECT g, 1000000000 FROM generate_series(1, 1000) g;
INSERT INTO mem VALUES (0, 0);
CREATE FUNCTION mem_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = '22012', MESSAGE = 'refused';
END $$;
CREATE TABLE mem_refusing (id int PRIMARY KEY, qty int NOT NULL);
INSERT INTO mem_refusing VALUES (1, 10);
CREATE TRIGGER mem_refuse BEFORE UPDATE ON mem_refusing
    FOR EACH ROW EXECUTE FUNCTION mem_refuse();

-- 3n failing calls: a domain error (raised on the C++ side), a PostgreSQL error from
-- deep inside SPI, a bad argument.
CREATE FUNCTION mem_failures(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..n LOOP
        BEGIN
            PERFORM ck.decrement('mem', 0, 'qty', 1);
        EXCEPTION WHEN SQLSTATE 'CK001' THEN NULL;
        END;
        BEGIN
            PERFORM ck.try_decrement('mem_refusing', 1, 'qty', 1);
        EXCEPTION WHEN division_by_zero THEN NULL;
        END;
        BEGIN
            PERFORM ck.try_decrement('mem', 1, 'qty', -1);
        EXCEPTION WHEN invalid_parameter_value THEN NULL;
        END;
    END LOOP;
END $$;

-- n successful calls, committed every 1000 so the table's own bookkeeping stays small.
CREATE PROCEDURE mem_successes(n int) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..n LOOP
        PERFORM ck.try_decrement('mem', i % 1000 + 1, 'qty', 1);
        IF i % 1000 = 0 THEN
            COMMIT;
        END IF;
    END LOOP;
END $$;

-- heap size of this backend, from /proc (VmData counts malloc, so C++ too)
CREATE FUNCTION mem_vmdata_kb() RETURNS bigint LANGUAGE sql AS $$
    SELECT (regexp_match(pg_read_file('/proc/self/status'), 'VmData:\s+(\d+)'))[1]::bigint
$$;
CREATE FUNCTION mem_context_bytes() RETURNS bigint LANGUAGE sql AS $$
    SELECT sum(total_bytes)::bigint FROM pg_backend_memory_contexts
$$;

-- warm up caches and plans, then measure
SELECT mem_failures(1000);
CALL mem_successes(2000);
SELECT mem_context_bytes() AS contexts_before, mem_vmdata_kb() AS vmdata_before \gset
SELECT mem_failures(34000);
SELECT mem_context_bytes() - :contexts_before AS context_growth,
       mem_vmdata_kb() - :vmdata_before AS heap_growth_kb \gset
SELECT :context_growth < 65536 AS contexts_flat_after_102000_failures,
       :heap_growth_kb < 1024 AS heap_flat_after_102000_failures;
SELECT mem_context_bytes() AS contexts_before, mem_vmdata_kb() AS vmdata_before \gset
CALL mem_successes(200000);
SELECT mem_context_bytes() - :contexts_before AS context_growth,
       mem_vmdata_kb() - :vmdata_before AS heap_growth_kb \gset
SELECT :context_growth < 65536 AS contexts_flat_after_200000_calls,
       :heap_growth_kb < 1024 AS heap_flat_after_200000_calls;
SELECT sum(1000000000 - qty) AS units_taken FROM mem WHERE id > 0;

-- Versioned updates and row locks: per call one versioned update that succeeds (the version
-- just read), every tenth a stale one (NULL), one CK006 caught, and a row lock on two rows.
CREATE TABLE mem_v (id int PRIMARY KEY, n int NOT NULL, version bigint NOT NULL DEFAULT 0);
INSERT INTO mem_v SELECT g, 0 FROM generate_series(1, 1000) g;
CREATE PROCEDURE mem_versions(calls int) LANGUAGE plpgsql AS $$
DECLARE
    k int;
    v bigint;
BEGIN
    FOR i IN 1..calls LOOP
        k := i % 1000 + 1;
        SELECT version INTO v FROM mem_v WHERE id = k;
        IF ck.try_update_if_version('mem_v', k, v, jsonb_build_object('n', i)) IS DISTINCT FROM v + 1 THEN
            RAISE 'update_if_version: row % refused version % at call %', k, v, i;
        END IF;
        IF ck.lock_rows('mem_v', ARRAY[k % 1000 + 1, k]) <> 2 THEN
            RAISE 'lock_rows: not two rows at call %', i;
        END IF;
        IF i % 10 = 0 THEN
            IF ck.try_update_if_version('mem_v', k, v, '{"n": 0}') IS NOT NULL THEN
                RAISE 'update_if_version: stale version % of row % accepted', v, k;
            END IF;
            BEGIN
                PERFORM ck.update_if_version('mem_v', k, v, '{"n": 0}');
                RAISE 'update_if_version_or_raise: stale version accepted';
            EXCEPTION WHEN SQLSTATE 'CK006' THEN NULL;
            END;
        END IF;
        IF i % 1000 = 0 THEN
            COMMIT;
        END IF;
    END LOOP;
END $$;
CALL mem_versions(5000);
SELECT mem_context_bytes() AS contexts_before, mem_vmdata_kb() AS vmdata_before \gset
CALL mem_versions(200000);
SELECT mem_context_bytes() - :contexts_before AS context_growth,
       mem_vmdata_kb() - :vmdata_before AS heap_growth_kb \gset
SELECT :context_growth < 65536 AS contexts_flat_after_200000_versioned_calls,
       :heap_growth_kb < 1024 AS heap_flat_after_200000_versioned_calls;
SELECT sum(version) AS versions_taken FROM mem_v;
