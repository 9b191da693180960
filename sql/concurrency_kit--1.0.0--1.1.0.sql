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

------------------------------------------------------------------------------------------
-- Job timeouts, distinct from the lease
------------------------------------------------------------------------------------------

ALTER TABLE ck.queues ADD COLUMN timeout interval CONSTRAINT queues_timeout_check
    CHECK (timeout > interval '0' AND pg_catalog.isfinite(timeout));
COMMENT ON COLUMN ck.queues.timeout IS
'how long one attempt of a job may run in all, whatever its heartbeats (NULL: no limit); then it fails with the reason timeout';

-- Every queue gets the nullable column timeout_at, its attempt's deadline (nothing is
-- rewritten). A queue made by a 1.1.0 library before this update has it already; a user's column
-- of that name and another type stops the update (42701).
DO $$
DECLARE
    q pg_catalog.regclass;
    found_type pg_catalog.regtype;
BEGIN
    FOR q IN SELECT r.queue FROM ck.queues AS r JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) r.queue LOOP
        found_type := NULL;
        SELECT a.atttypid INTO found_type FROM pg_catalog.pg_attribute AS a
         WHERE a.attrelid OPERATOR(pg_catalog.=) q AND a.attname OPERATOR(pg_catalog.=) 'timeout_at' AND NOT a.attisdropped;
        CONTINUE WHEN found_type OPERATOR(pg_catalog.=) 'pg_catalog.timestamptz'::pg_catalog.regtype;
        IF found_type IS NOT NULL THEN
            RAISE EXCEPTION 'queue % already has a column named timeout_at', q
                USING ERRCODE = 'duplicate_column', HINT = 'Rename that column, then update the extension: 1.1.0 adds its own.';
        END IF;
        EXECUTE pg_catalog.format('ALTER TABLE %s ADD COLUMN timeout_at pg_catalog.timestamptz', q);
    END LOOP;
END
$$;

------------------------------------------------------------------------------------------
-- Bulk redrive and purge of dead letters by filter
------------------------------------------------------------------------------------------

-- ck.retry_dead and ck.purge_dead for every dead letter matching all the conditions given (NULL:
-- no condition), one batch per call, oldest first; rows another transaction holds are skipped.
CREATE FUNCTION ck.retry_dead_matching(queue regclass, last_error text DEFAULT NULL, error_like text DEFAULT NULL,
                                       older_than interval DEFAULT NULL, min_attempts integer DEFAULT NULL,
                                       payload_contains jsonb DEFAULT NULL, batch integer DEFAULT 1000)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_retry_dead_matching';
COMMENT ON FUNCTION ck.retry_dead_matching(regclass, text, text, interval, integer, jsonb, integer) IS
'puts up to batch dead jobs matching every condition given (last_error equal, last_error LIKE error_like, died more than older_than ago, attempts >= min_attempts, payload @> payload_contains) back in their queue, as ck.retry_dead, oldest first; one whose unique key another job holds stays dead; returns how many';

CREATE FUNCTION ck.purge_dead_matching(queue regclass, last_error text DEFAULT NULL, error_like text DEFAULT NULL,
                                       older_than interval DEFAULT NULL, min_attempts integer DEFAULT NULL,
                                       payload_contains jsonb DEFAULT NULL, batch integer DEFAULT 1000)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_purge_dead_matching';
COMMENT ON FUNCTION ck.purge_dead_matching(regclass, text, text, interval, integer, jsonb, integer) IS
'deletes up to batch dead letters matching every condition given (as ck.retry_dead_matching), oldest first; returns how many';

------------------------------------------------------------------------------------------
-- History of finished jobs, results, waiting for a job
------------------------------------------------------------------------------------------
