-- CALL ck.retry: one fresh transaction per attempt at the requested isolation level.
CREATE TABLE retry_log (attempt int, isolation text, note text);

CALL ck.retry($$INSERT INTO retry_log VALUES (ck.current_attempt(), current_setting('transaction_isolation'), 'default')$$);
CALL ck.retry($$INSERT INTO retry_log VALUES (ck.current_attempt(), current_setting('transaction_isolation'), 'rr')$$,
              'repeatable read');
CALL ck.retry($$INSERT INTO retry_log VALUES (ck.current_attempt(), current_setting('transaction_isolation'), 'rc')$$,
              isolation => 'READ COMMITTED');
SELECT * FROM retry_log ORDER BY note;
SELECT ck.current_attempt() AS outside_retry;

-- several statements run as one transaction: when one fails, none is kept
CALL ck.retry($$INSERT INTO retry_log VALUES (0, '', 'kept'); INSERT INTO retry_log VALUES (0, '', 'kept too')$$);
CALL ck.retry($$INSERT INTO retry_log VALUES (0, '', 'lost'); SELECT 1 / 0$$);
SELECT note FROM retry_log WHERE attempt = 0 ORDER BY note;

-- a retryable error is retried until max_attempts, then raised with the count in DETAIL;
-- any other error is raised at once, unchanged
CREATE FUNCTION conflict_until(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO retry_log VALUES (ck.current_attempt(), '', 'try');
    IF ck.current_attempt() < n THEN
        RAISE EXCEPTION USING ERRCODE = 'serialization_failure', MESSAGE = 'simulated conflict',
            DETAIL = 'attempt ' || ck.current_attempt();
    END IF;
END $$;
SELECT calls AS calls_before, attempts AS attempts_before, retries AS retries_before FROM ck.retry_stats() \gset
CALL ck.retry('SELECT conflict_until(3)');
SELECT attempt FROM retry_log WHERE note = 'try' ORDER BY attempt;
SELECT calls - :calls_before AS calls, attempts - :attempts_before AS attempts, retries - :retries_before AS retries
FROM ck.retry_stats();
\set SHOW_CONTEXT never
CALL ck.retry('SELECT conflict_until(10)', max_attempts => 2);
\echo :LAST_ERROR_SQLSTATE
CALL ck.retry($$DO $d$ BEGIN RAISE EXCEPTION USING ERRCODE = '23505', MESSAGE = 'duplicate order',
                  DETAIL = 'order 7', HINT = 'use another id'; END $d$ $$);
\echo :LAST_ERROR_SQLSTATE
CALL ck.retry($$DO $d$ BEGIN RAISE EXCEPTION USING ERRCODE = '55P03', MESSAGE = 'busy'; END $d$ $$,
              max_attempts => 2);
\echo :LAST_ERROR_SQLSTATE
CALL ck.retry($$DO $d$ BEGIN RAISE EXCEPTION USING ERRCODE = '55P03', MESSAGE = 'busy'; END $d$ $$,
              max_attempts => 2, retry_lock_timeout => true);
\echo :LAST_ERROR_SQLSTATE
\set SHOW_CONTEXT errors
SELECT exhausted > 0 AS counted_exhaustion FROM ck.retry_stats();

-- refused where it cannot commit, and bad input
BEGIN;
CALL ck.retry('SELECT 1');
ROLLBACK;
CREATE FUNCTION call_retry() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    n int;
BEGIN
    CALL ck.retry('SELECT 1', attempts => n);
END $$;
SELECT call_retry();
CALL ck.retry('SELECT 1', 'chaos');
CALL ck.retry('SELECT 1', max_attempts => 0);
CALL ck.retry('SELECT 1', max_attempts => NULL);
CALL ck.retry(NULL);
CALL ck.retry('');
CALL ck.retry(' ; ');
CALL ck.retry('COMMIT');
CALL ck.retry('INSERT INTO retry_log VALUES (1); ROLLBACK');
SELECT count(*) AS rows_after_bad_input FROM retry_log WHERE attempt = 1 AND note IS NULL;
