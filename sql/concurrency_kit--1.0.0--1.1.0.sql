-- concurrency_kit 1.0.0 -> 1.1.0: the queue in production (issue 47). Every 1.0.0 call keeps
-- its meaning; what is new is opt-in per queue. Names schema-qualified, nothing SECURITY DEFINER
-- (the control file's trusted = true).
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '1.1.0'" to load this file. \quit

------------------------------------------------------------------------------------------
-- Pause and resume
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Rate limits (and ck.try_rate for any SQL)
------------------------------------------------------------------------------------------

-- Rate keys (ck.try_rate, ck.rate): at most n calls counted in any window of length period. A
-- key's row keeps its n latest counted moments, oldest first; a call under the rate updates it in
-- one UPDATE ... WHERE, whose row lock holds until the caller's transaction ends, so only
-- committed calls count and concurrent calls of one key are counted one after the other. Keys are
-- shared names, like advisory-lock namespaces: every role may count calls of every key.
CREATE TABLE ck.rates (
    key    text PRIMARY KEY CHECK (octet_length(key) BETWEEN 1 AND 256),
    stamps timestamptz[] NOT NULL
);
COMMENT ON TABLE ck.rates IS 'rate keys of ck.try_rate and ck.rate: the latest moments counted per key, oldest first';
GRANT SELECT, INSERT, UPDATE ON ck.rates TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.rates', '');

CREATE FUNCTION ck.try_rate(key text, n integer, period interval)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_rate';
COMMENT ON FUNCTION ck.try_rate(text, integer, interval) IS
'counts a call of key and returns true if fewer than n calls of it were counted in the last period, else false with nothing counted; a call counts once its transaction commits (the key''s row stays locked until then: a concurrent call of the key waits, as long as lock_timeout allows)';

CREATE FUNCTION ck.rate(key text, n integer, period interval)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_rate';
COMMENT ON FUNCTION ck.rate(text, integer, interval) IS
'ck.try_rate that raises CK007 (sqlstate_action: busy) when the key is at its rate, saying when the next call would be counted; returns true';

-- Queue rate limits (ck.set_rate_limit): claims start at most max_jobs jobs of one concurrency key
-- in any window of length period, across every worker, counting claims that commit. A NULL key
-- is the default for every key without a limit of its own, and the rate of the jobs without a
-- key (counted together). Anyone may read the limits; only the owner of a queue may set them
-- (row-level security, as ck.concurrency_limits).
CREATE TABLE ck.rate_limits (
    queue           regclass NOT NULL,
    concurrency_key text,
    max_jobs        integer NOT NULL CHECK (max_jobs BETWEEN 1 AND 10000),
    period          interval NOT NULL CHECK (period > '0'),
    CONSTRAINT rate_limits_key UNIQUE NULLS NOT DISTINCT (queue, concurrency_key)
);
COMMENT ON TABLE ck.rate_limits IS 'per queue and concurrency key (NULL: the default, and the jobs without a key), how many claims may start jobs of the key in any window of length period';
ALTER TABLE ck.rate_limits ENABLE ROW LEVEL SECURITY;
CREATE POLICY rate_limits_read ON ck.rate_limits FOR SELECT USING (true);
CREATE POLICY rate_limits_owner ON ck.rate_limits FOR ALL
    USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'))
    WITH CHECK (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.rate_limits TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.rate_limits', '');

-- The starts counted per rate-limited key: its latest claim moments (as ck.rates keeps them) and
-- the moment up to which claims have put its jobs over the rate off (booked). A claim locks the
-- row while it counts and holds it until it ends. Whoever may claim from a queue (UPDATE) may
-- read and write its keys' rows.
CREATE TABLE ck.rate_starts (
    queue           regclass NOT NULL,
    keyed           boolean NOT NULL,   -- false: the jobs without a key (concurrency_key '')
    concurrency_key text NOT NULL,
    stamps          timestamptz[] NOT NULL,
    booked          timestamptz,
    PRIMARY KEY (queue, keyed, concurrency_key)
);
COMMENT ON TABLE ck.rate_starts IS 'claims counted per queue and rate-limited concurrency key: the latest moments, oldest first, and how far jobs over the rate were put off';
ALTER TABLE ck.rate_starts ENABLE ROW LEVEL SECURITY;
CREATE POLICY rate_starts_claimer ON ck.rate_starts FOR ALL
    USING (pg_catalog.has_table_privilege(queue, 'UPDATE'))
    WITH CHECK (pg_catalog.has_table_privilege(queue, 'UPDATE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.rate_starts TO PUBLIC;

CREATE FUNCTION ck.set_rate_limit(queue regclass, concurrency_key text, max_jobs integer, period interval DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
DECLARE
    queue_name pg_catalog.text;
BEGIN
    IF queue IS NULL THEN
        RAISE EXCEPTION 'queue must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) queue) THEN
        RAISE EXCEPTION 'relation with OID % does not exist', queue::pg_catalog.oid USING ERRCODE = 'undefined_table';
    END IF;
    queue_name := (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, queue, 0)).identity;
    IF max_jobs IS NOT NULL AND (max_jobs OPERATOR(pg_catalog.<) 1 OR max_jobs OPERATOR(pg_catalog.>) 10000) THEN
        RAISE EXCEPTION 'max_jobs must be between 1 and 10000, got %', max_jobs USING ERRCODE = 'invalid_parameter_value',
            HINT = 'NULL removes the limit; for a higher rate, count over a shorter period.';
    END IF;
    IF max_jobs IS NOT NULL AND period IS NULL THEN
        RAISE EXCEPTION 'period must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF max_jobs IS NOT NULL AND NOT (period OPERATOR(pg_catalog.>) '0'::pg_catalog.interval) THEN
        RAISE EXCEPTION 'period must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_jobs IS NOT NULL AND NOT pg_catalog.isfinite(period) THEN
        RAISE EXCEPTION 'period must be finite' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_jobs IS NOT NULL AND period OPERATOR(pg_catalog.>) '100 years'::pg_catalog.interval THEN
        RAISE EXCEPTION 'period must be at most 100 years' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT FROM ck.queues AS r WHERE r.queue OPERATOR(pg_catalog.=) set_rate_limit.queue) THEN
        RAISE EXCEPTION 'table % is not a queue', queue_name USING ERRCODE = 'wrong_object_type',
            HINT = 'Create queues with ck.create_queue().';
    END IF;
    IF NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class AS c
                                   WHERE c.oid OPERATOR(pg_catalog.=) queue), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', queue_name USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- Each shard of a distributed queue claims on its own worker: a rate across them would need a
    -- count shared by every worker's claims, which ck does not keep.
    IF EXISTS (SELECT FROM ck.distributed_queues AS d WHERE d.queue OPERATOR(pg_catalog.=) set_rate_limit.queue) THEN
        RAISE EXCEPTION 'ck.set_rate_limit on a distributed queue is not supported' USING ERRCODE = 'feature_not_supported',
            DETAIL = pg_catalog.format('Queue %s is distributed with Citus; its shards claim apart.', queue_name),
            HINT = 'Limit the rate of a queue that is not distributed, or call ck.try_rate in the job.';
    END IF;
    IF max_jobs IS NULL THEN
        DELETE FROM ck.rate_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) set_rate_limit.queue
            AND l.concurrency_key IS NOT DISTINCT FROM set_rate_limit.concurrency_key;
        -- The counts of the keys left without a limit go too.
        DELETE FROM ck.rate_starts AS s WHERE s.queue OPERATOR(pg_catalog.=) set_rate_limit.queue
            AND CASE WHEN set_rate_limit.concurrency_key IS NOT NULL
                     THEN s.keyed AND s.concurrency_key OPERATOR(pg_catalog.=) set_rate_limit.concurrency_key
                          AND NOT EXISTS (SELECT FROM ck.rate_limits AS d WHERE d.queue OPERATOR(pg_catalog.=) s.queue
                                                                           AND d.concurrency_key IS NULL)
                     ELSE NOT s.keyed OR NOT EXISTS (SELECT FROM ck.rate_limits AS o
                                                     WHERE o.queue OPERATOR(pg_catalog.=) s.queue
                                                       AND o.concurrency_key OPERATOR(pg_catalog.=) s.concurrency_key) END;
    ELSE
        INSERT INTO ck.rate_limits AS l VALUES (queue, concurrency_key, max_jobs, period)
            ON CONFLICT ON CONSTRAINT rate_limits_key DO UPDATE SET max_jobs = EXCLUDED.max_jobs, period = EXCLUDED.period;
    END IF;
    -- Claims read the queue's limits with its plans: a change of its row in ck.queues drops them
    -- (ck_internal.queues_changed) in every session, once this commits.
    UPDATE ck.queues AS r SET queue = r.queue WHERE r.queue OPERATOR(pg_catalog.=) set_rate_limit.queue;
END
$$;
COMMENT ON FUNCTION ck.set_rate_limit(regclass, text, integer, interval) IS
'claims start at most max_jobs jobs of the concurrency key (NULL: the default for every key, and the jobs without a key) in any window of length period, counting claims that commit; a job claimed over the rate is put off to when the key has room; NULL max_jobs removes the limit; 0A000 on a distributed queue';

-- A queue's rate limits and counts go with its registration (ck.drop_queue), so that a table
-- that takes its OID later does not inherit them.
CREATE FUNCTION ck_internal.queue_rates_dropped() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM ck.rate_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) OLD.queue;
    DELETE FROM ck.rate_starts AS s WHERE s.queue OPERATOR(pg_catalog.=) OLD.queue;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION ck_internal.queue_rates_dropped() IS 'trigger on ck.queues: a queue''s rate limits and counts go with its registration';
CREATE TRIGGER queue_rates_dropped AFTER DELETE ON ck.queues
    FOR EACH ROW EXECUTE FUNCTION ck_internal.queue_rates_dropped();

-- A queue with rate limits is not distributed: its shards would claim apart, each without them.
CREATE FUNCTION ck_internal.queue_rates_distributed() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF EXISTS (SELECT FROM ck.rate_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) NEW.queue) THEN
        RAISE EXCEPTION 'queue % has rate limits and cannot be distributed', NEW.queue USING ERRCODE = 'feature_not_supported',
            HINT = 'Remove them first with ck.set_rate_limit(queue, key, NULL): a distributed queue takes no rate limits.';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION ck_internal.queue_rates_distributed() IS 'trigger on ck.distributed_queues: a queue with rate limits is not distributed (0A000)';
CREATE TRIGGER queue_rates_distributed BEFORE INSERT ON ck.distributed_queues
    FOR EACH ROW EXECUTE FUNCTION ck_internal.queue_rates_distributed();

COMMENT ON FUNCTION ck.sqlstate_action(text) IS
'what a client should do with an error: retry (40001, 40P01, CK006), busy (55P03, CK007), conflict (23505, 23P01, CK001-CK005) or error';

------------------------------------------------------------------------------------------
-- Job timeouts, distinct from the lease
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Bulk redrive and purge of dead letters by filter
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- History of finished jobs, results, waiting for a job
------------------------------------------------------------------------------------------
