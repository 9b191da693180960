-- Advisory locks: namespaces, scopes, held_locks, set_lock_timeout, and bad input. A lock call
-- by name takes only a namespace created with ck.lock_namespace; the transaction-scoped calls
-- warn outside a transaction block; keys are bigint within int4.
SELECT ck.lock_namespace('reports') = ck.lock_namespace('reports') AS stable_number,
       ck.lock_namespace('reports') <> ck.lock_namespace('exports') AS distinct_numbers;
SELECT name FROM ck.lock_namespaces WHERE name IN ('reports', 'exports') ORDER BY id;

-- transaction locks end with the transaction; the same key as pg_advisory_xact_lock
BEGIN;
SELECT ck.xact_lock('reports', 1);
SELECT ck.xact_lock(ck.lock_namespace('reports'), 2, timeout => '1 second');
SELECT ck.try_xact_lock('reports', 3) AS took_3;
SELECT ns_name, key, scope, granted FROM ck.held_locks();
SELECT count(*) AS same_lock_in_pg_locks FROM pg_locks
WHERE locktype = 'advisory' AND classid = ck.lock_namespace('reports') AND objid = 1 AND objsubid = 2
  AND pid = pg_backend_pid();
COMMIT;
SELECT count(*) AS held_after_commit FROM ck.held_locks();

-- session locks survive COMMIT and ROLLBACK, and are unlocked as often as locked
SELECT ck.session_lock('exports', 9);
SELECT ck.session_lock('exports', 9);
BEGIN; SELECT ck.xact_lock('reports', 1); ROLLBACK;
SELECT ns_name, key, scope FROM ck.held_locks();
SELECT * FROM ck_internal.session_locks_held();
SELECT ck.session_unlock('exports', 9);
SELECT ck.session_unlock('exports', 9);
SELECT test.outcome($$SELECT ck.session_unlock('exports', 9)$$);
SELECT ck.session_lock(ck.lock_namespace('exports'), 10);
SELECT ck.session_unlock_all();
SELECT count(*) AS held_after_unlock_all FROM ck.held_locks();

-- set_lock_timeout is SET LOCAL: it ends with the transaction
SET lock_timeout = '7s';
BEGIN;
SELECT ck.set_lock_timeout('250 ms');
SHOW lock_timeout;
COMMIT;
SHOW lock_timeout;
RESET lock_timeout;

-- a name never created is an error (42704), not a new namespace: a typo locks nothing anyone
-- else locks. The HINT names the closest registered name, if one is close, and how to create one.
BEGIN;
SELECT test.outcome($$SELECT ck.xact_lock('report', 1)$$);
SELECT test.outcome($$SELECT ck.try_xact_lock('exprots', 1)$$);
SELECT test.outcome($$SELECT ck.session_lock('nothing-like-it', 1)$$);
SELECT test.outcome($$SELECT ck.session_unlock('nothing-like-it', 1)$$);
SELECT test.outcome($$SELECT ck.xact_lock('reports-typo-far-from-anything', 1, '1 second')$$);
ROLLBACK;
SELECT count(*) AS created_by_lock_calls FROM ck.lock_namespaces
WHERE name IN ('report', 'exprots', 'nothing-like-it', 'reports-typo-far-from-anything');
-- created in a migration, then usable by everyone
SELECT ck.lock_namespace('report') IS NOT NULL AS created;
BEGIN;
SELECT ck.xact_lock('report', 1);
COMMIT;

-- outside a transaction block the transaction-scoped calls warn (25P01): the lock ends with
-- the statement; inside one, and for session locks, no warning
\set VERBOSITY sqlstate
SELECT ck.xact_lock('reports', 1);
\set VERBOSITY default
SELECT ck.xact_lock('reports', 1);
SELECT ck.try_xact_lock(ck.lock_namespace('reports'), 1);
SELECT count(*) AS held_after_the_statement FROM ck.held_locks();
BEGIN;
SELECT ck.xact_lock('reports', 1), ck.try_xact_lock('reports', 2);
COMMIT;
SELECT ck.session_lock('reports', 1);
SELECT ck.session_unlock('reports', 1);
-- in a function called in autocommit too: the lock still ends with the statement
CREATE FUNCTION locked_work() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ck.xact_lock('reports', 5);
    RETURN 'done';
END $$;
SELECT locked_work();
-- not inside ck.retry, whose attempt's transaction lasts as long as the caller's SQL
CALL ck.retry($$SELECT ck.xact_lock('reports', 6); SELECT locked_work()$$);

-- keys are bigint: a bigint id within int4 needs no cast; outside int4, 22003 with a HINT
BEGIN;
SELECT ck.xact_lock('reports', 2147483647::bigint), ck.try_xact_lock(1, -2147483648::bigint);
SELECT key FROM ck.held_locks() ORDER BY key;
SELECT test.outcome($$SELECT ck.xact_lock('reports', 2147483648)$$);
SELECT test.outcome($$SELECT ck.try_xact_lock(1, -2147483649)$$);
SELECT test.outcome($$SELECT ck.session_lock(1, 9223372036854775807)$$);
ROLLBACK;

-- bad input: a clear error with a fitting SQLSTATE
SELECT statement, test.outcome(statement) FROM (VALUES
    ($s$SELECT ck.lock_namespace(NULL)$s$),
    ($s$SELECT ck.lock_namespace('')$s$),
    ($s$SELECT ck.lock_namespace(repeat('x', 64))$s$),
    ($s$SELECT ck.xact_lock(NULL::int, 1)$s$),
    ($s$SELECT ck.xact_lock(1, NULL)$s$),
    ($s$SELECT ck.xact_lock('reports', NULL)$s$),
    ($s$SELECT ck.xact_lock(NULL::text)$s$),
    ($s$SELECT ck.xact_lock(1, 1, '-1 second')$s$),
    ($s$SELECT ck.xact_lock(1, 1, '0 seconds')$s$),
    ($s$SELECT ck.try_xact_lock(1, NULL)$s$),
    ($s$SELECT ck.session_lock(1, NULL)$s$),
    ($s$SELECT ck.session_unlock(1, 1)$s$),
    ($s$SELECT ck.session_unlock('never-locked', 1)$s$),
    ($s$SELECT ck.set_lock_timeout(NULL)$s$)
) AS bad(statement);
SELECT ck.set_lock_timeout('1 second');   -- outside a transaction block
BEGIN;
SELECT test.outcome($$SELECT ck.set_lock_timeout('-1 second')$$);
ROLLBACK;

-- a timeout is checked by its whole length, not field by field
BEGIN;
SELECT ck.set_lock_timeout('1 day -1 hour');
SHOW lock_timeout;
ROLLBACK;

-- the lock calls carry no SET clause, so they must not depend on the caller's search_path:
-- a schema ahead of pg_catalog with its own text = text and its own lock_namespaces table
-- changes nothing (a new name is registered, an existing one found, both in ck's table)
CREATE SCHEMA hostile;
CREATE FUNCTION hostile.eq(a text, b text) RETURNS boolean LANGUAGE plpgsql
AS $$ BEGIN RAISE EXCEPTION 'hostile = called'; END $$;
CREATE OPERATOR hostile.= (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.eq);
CREATE TABLE hostile.lock_namespaces (id int, name text);
INSERT INTO hostile.lock_namespaces VALUES (-1, 'registered-before');
INSERT INTO ck.lock_namespaces (name) VALUES ('registered-before');
SET search_path = hostile, pg_catalog;
SELECT ck.lock_namespace('registered-before') = (SELECT id FROM ck.lock_namespaces n
                                                 WHERE n.name OPERATOR(pg_catalog.=) 'registered-before') AS found_in_ck;
SELECT ck.lock_namespace('registered-under-hostile-path') IS NOT NULL AS registered;
BEGIN;
SELECT ck.try_xact_lock('registered-under-hostile-path', 1) AS took_lock;
COMMIT;
RESET search_path;
SELECT count(*) AS registered_in_ck FROM ck.lock_namespaces WHERE name = 'registered-under-hostile-path';
DROP SCHEMA hostile CASCADE;
