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

------------------------------------------------------------------------------------------
-- Job timeouts, distinct from the lease
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Bulk redrive and purge of dead letters by filter
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- History of finished jobs, results, waiting for a job
------------------------------------------------------------------------------------------
