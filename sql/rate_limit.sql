-- ck.try_rate and ck.rate (issue 47): at most n calls counted in any window of length period,
-- counted only when the transaction commits; bad input; labels; privileges.
\set VERBOSITY terse

-- n calls pass, the next ones do not, and nothing is counted for them.
SELECT g, ck.try_rate('api:1', 3, '1 hour') FROM generate_series(1, 5) AS g;
SELECT total - marks[11] AS kept FROM ck.rates WHERE key = 'api:1';
SELECT ck.rate('api:1', 3, '1 hour');
-- the raising form says when the next call is counted: when the calls' bucket (of a tenth of the
-- period) leaves the window, an hour to an hour and 6 minutes after them
DO $$
DECLARE
    d text;
    s text;
BEGIN
    PERFORM ck.rate('api:1', 3, '1 hour');
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, s = RETURNED_SQLSTATE;
    RAISE NOTICE 'sqlstate %, detail names a moment 1 hour to 1 hour 6 minutes ahead: %', s,
        substring(d FROM '^The next call is counted from (.*)\.$')::timestamptz - clock_timestamp()
            BETWEEN interval '59 minutes 59 seconds' AND interval '66 minutes';
END
$$;
SELECT ck.sqlstate_action('CK007');
-- a larger n for the same key counts again; n = 1 needs the latest call out of the window
SELECT ck.try_rate('api:1', 4, '1 hour') AS fourth, ck.try_rate('api:1', 1, '1 hour') AS one_per_hour;

-- A rolled-back call is not counted; a committed one is.
BEGIN;
SELECT ck.try_rate('api:2', 1, '1 hour') AS in_rolled_back;
ROLLBACK;
SELECT count(*) AS rows_after_rollback FROM ck.rates WHERE key = 'api:2';
SELECT ck.try_rate('api:2', 1, '1 hour') AS first, ck.try_rate('api:2', 1, '1 hour') AS second;
BEGIN;
SELECT ck.try_rate('api:3', 1, '1 hour') AS counted;
SAVEPOINT s;
SELECT ck.try_rate('api:3', 2, '1 hour') AS rolled_back_to_savepoint;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT total - marks[11] AS kept FROM ck.rates WHERE key = 'api:3';

-- The window slides by buckets of a tenth of the period (100 s here): the calls of a bucket stay
-- counted until the 11th bucket after theirs begins, between period and period + period / 10 after
-- them: never less than period, at most a tenth of it more. Time moved instead of sleeping: the
-- key's latest bucket moved back by whole buckets.
SELECT ck.try_rate('api:4', 2, '1000 seconds') AS a, ck.try_rate('api:4', 2, '1000 seconds') AS b,
       ck.try_rate('api:4', 2, '1000 seconds') AS c;
SELECT width, total, marks FROM ck.rates WHERE key = 'api:4';
-- 10 buckets later (900 to 1,100 s after the calls): their bucket, partly in the window, counts in
-- full, so a call is refused, early by at most 100 s
UPDATE ck.rates SET bucket = bucket - 10 WHERE key = 'api:4';
SELECT ck.try_rate('api:4', 2, '1000 seconds') AS ten_buckets_later;
-- 11 buckets later (more than 1,000 s): out of the window, room for 2 again, then not
UPDATE ck.rates SET bucket = bucket - 1 WHERE key = 'api:4';
SELECT ck.try_rate('api:4', 2, '1000 seconds') AS a, ck.try_rate('api:4', 2, '1000 seconds') AS b,
       ck.try_rate('api:4', 2, '1000 seconds') AS c;
SELECT total, total - marks[11] AS in_window, marks FROM ck.rates WHERE key = 'api:4';
-- a row counted in a bucket ahead of the clock (a clock stepped back, another server's): calls
-- count in that bucket, the row's buckets never go back
UPDATE ck.rates SET bucket = bucket + 3 WHERE key = 'api:4';
SELECT bucket AS ahead FROM ck.rates WHERE key = 'api:4' \gset
SELECT ck.try_rate('api:4', 3, '1000 seconds') AS counted, ck.try_rate('api:4', 3, '1000 seconds') AS over;
SELECT bucket = :ahead AS same_bucket, total - marks[11] AS in_window FROM ck.rates WHERE key = 'api:4';
-- a row left for long (its bucket from 1970): every bucket out of the window
UPDATE ck.rates SET bucket = 0 WHERE key = 'api:4';
SELECT ck.try_rate('api:4', 1, '1000 seconds') AS long_after;
-- another period: the counts still in the window move to the new period's bucket that holds the
-- end of theirs (later, so kept at least as long), in one more statement
SELECT ck.try_rate('api:5', 2, '1 hour') AS a, ck.try_rate('api:5', 2, '1 hour') AS b;
SELECT ck.try_rate('api:5', 2, '2 hours') AS two_hours, ck.try_rate('api:5', 3, '2 hours') AS three_in_two_hours;
SELECT width, total, total - marks[11] AS in_window FROM ck.rates WHERE key = 'api:5';
-- a period not a multiple of 10 µs: the width is rounded up (the buckets cover a period at least)
SELECT ck.try_rate('api:6', 1, '15 microseconds') AS first;
SELECT width FROM ck.rates WHERE key = 'api:6';

-- Bad input: a clear error with its SQLSTATE, nothing counted.
SELECT count(*) AS keys_before FROM ck.rates \gset
CREATE FUNCTION pg_temp.error_of(call text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'SELECT ' || call;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
SELECT call, pg_temp.error_of(call) FROM unnest(ARRAY[
    $$ck.try_rate(NULL, 1, '1 minute')$$,
    $$ck.try_rate('k', NULL, '1 minute')$$,
    $$ck.try_rate('k', 1, NULL)$$,
    $$ck.rate(NULL, 1, '1 minute')$$,
    $$ck.try_rate('', 1, '1 minute')$$,
    $$ck.try_rate(repeat('x', 257), 1, '1 minute')$$,
    $$ck.try_rate(repeat('é', 129), 1, '1 minute')$$,
    $$ck.try_rate('k', 0, '1 minute')$$,
    $$ck.try_rate('k', -5, '1 minute')$$,
    $$ck.try_rate('k', 1, '0')$$,
    $$ck.try_rate('k', 1, '-1 second')$$,
    $$ck.try_rate('k', 1, '1 month -30 days')$$,
    $$ck.try_rate('k', 1, '101 years')$$,
    $$ck.rate('k', 0, '1 minute')$$]) AS call;
-- 'infinity' is an interval from PostgreSQL 17 on; before, the same line is shown
SELECT CASE WHEN current_setting('server_version_num')::int < 170000 THEN '22023: period must be finite'
            ELSE pg_temp.error_of($$ck.try_rate('k', 1, 'infinity')$$) END AS infinite_period;
SELECT count(*) = :keys_before AS nothing_counted FROM ck.rates;
\set VERBOSITY default
SELECT ck.try_rate('k', 0, '1 hour');
\set VERBOSITY terse
-- the largest n and the longest key are fine: the key's row is as large for any n
SELECT ck.try_rate(repeat('x', 256), 2147483647, '100 years') AS largest;

-- Labels: volatile, parallel unsafe, the caller's rights, no SET clause, not strict (NULLs raise).
SELECT p.oid::regprocedure, p.provolatile, p.proparallel, p.prosecdef, p.proconfig, p.proisstrict
FROM pg_proc AS p WHERE p.pronamespace = 'ck'::regnamespace AND p.proname IN ('try_rate', 'rate')
ORDER BY 1::text;

-- Privileges: any role may count calls of any key (keys are shared names, as advisory-lock
-- namespaces), with no grant of its own.
CREATE ROLE regress_ck_rate;
SET ROLE regress_ck_rate;
SELECT ck.try_rate('api:1', 5, '1 hour') AS other_role_same_key, ck.try_rate('role:mine', 1, '1 hour') AS own_key;
RESET ROLE;
DROP ROLE regress_ck_rate;

-- The caller's search_path changes nothing: an operator of another schema is not used.
CREATE SCHEMA rate_hostile;
CREATE FUNCTION rate_hostile.lt(integer, integer) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR rate_hostile.< (LEFTARG = integer, RIGHTARG = integer, FUNCTION = rate_hostile.lt);
SET search_path = rate_hostile, pg_catalog;
SELECT ck.try_rate('api:2', 1, '1 hour') AS still_over;
RESET search_path;
DROP SCHEMA rate_hostile CASCADE;

DELETE FROM ck.rates;
