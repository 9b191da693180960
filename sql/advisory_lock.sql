-- Advisory locks: namespaces, scopes, held_locks, set_lock_timeout, and bad input.
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

-- a registration in a prepared transaction that is rolled back is not remembered: the name
-- is looked up (and registered) again, and the number is the one in the registry
BEGIN;
SELECT ck.lock_namespace('prepared-then-rolled-back') IS NOT NULL AS registered;
PREPARE TRANSACTION 'ck_namespace';
ROLLBACK PREPARED 'ck_namespace';
SELECT ck.lock_namespace('prepared-then-rolled-back') AS number \gset
SELECT :number = (SELECT id FROM ck.lock_namespaces WHERE name = 'prepared-then-rolled-back') AS number_in_registry;

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
SELECT ck.try_xact_lock('registered-under-hostile-path', 1) AS took_lock;
RESET search_path;
SELECT count(*) AS registered_in_ck FROM ck.lock_namespaces WHERE name = 'registered-under-hostile-path';
DROP SCHEMA hostile CASCADE;
