-- Queue benchmark, memory: one backend makes :calls claim + complete calls, committing every
-- 100, and samples its VmData (/proc/self/status) and the sum of its memory contexts after the
-- first 100 calls and every :sample_every calls.
-- Each transaction enqueues its own 100 jobs, with a priority lower than any before, so that the
-- claim finds them at the head of its index and never walks over the dead entries of the jobs
-- completed before (that cost is the latency benchmark's business; here it would only make the
-- run long). 10,000 jobs that are never claimed (they come after all others) give the table a
-- realistic size when the claim is first planned: planned on a near-empty table, its cached
-- plan would update the claimed rows through a sequential scan, slower and slower as the table
-- grows (autovacuum, which would bring a new plan, hears nothing from a backend inside CALL).
SELECT FROM ck.create_queue('memory') WHERE to_regclass('memory') IS NULL;
DROP TABLE IF EXISTS memory_samples;
CREATE TABLE memory_samples (calls bigint, vmdata_kb bigint, context_bytes bigint, at timestamptz);
TRUNCATE memory, memory_samples;
INSERT INTO memory (payload, priority) SELECT '{"n": 0}', 1 FROM generate_series(1, 10000);
ANALYZE memory;

CREATE OR REPLACE PROCEDURE claim_complete(calls int, sample_every int)
LANGUAGE plpgsql AS $$
DECLARE
    per_xact constant int := 100;
    job record;
BEGIN
    FOR i IN 1..calls LOOP
        IF i % per_xact = 1 THEN
            INSERT INTO memory (payload, priority) SELECT '{"n": 0}', -i FROM generate_series(1, per_xact);
        END IF;
        SELECT c.id, c.lease_token INTO STRICT job FROM ck.claim('memory') AS c;
        IF NOT ck.complete('memory', job.id, job.lease_token) THEN
            RAISE 'job % not completed', job.id;
        END IF;
        IF i % per_xact = 0 THEN
            IF i = per_xact OR i % sample_every = 0 THEN
                INSERT INTO memory_samples
                SELECT i, (regexp_match(pg_read_file('/proc/self/status'), 'VmData:\s+(\d+) kB'))[1]::bigint,
                       (SELECT sum(total_bytes) FROM pg_backend_memory_contexts), clock_timestamp();
            END IF;
            COMMIT;
        END IF;
    END LOOP;
END
$$;

CALL claim_complete(:calls, :sample_every);
