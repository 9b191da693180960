-- ck.volatility_audit: functions whose volatility label breaks the rule "IMMUTABLE only
-- without table reads, STABLE for read-only functions, VOLATILE for side effects".
CREATE SCHEMA audit_demo;
SET search_path = audit_demo, public;

CREATE TABLE rates (currency text PRIMARY KEY, rate numeric NOT NULL);
CREATE TABLE accounts (id int PRIMARY KEY, balance numeric NOT NULL);
CREATE TABLE audit_log (at timestamptz, what text);
CREATE SEQUENCE ticket_seq;
CREATE VIEW rich_accounts AS SELECT id, balance FROM accounts WHERE balance > 1000;
INSERT INTO rates VALUES ('EUR', 1.1);
INSERT INTO accounts VALUES (1, 100), (2, 5000);

------------------------------------------------------------------------------------------
-- SQL, string body
------------------------------------------------------------------------------------------
-- IMMUTABLE reading a table: flagged (STABLE).
CREATE FUNCTION sql_immutable_reads(c text) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$ SELECT rate FROM rates WHERE currency = c $$;
-- IMMUTABLE pure arithmetic: fine.
CREATE FUNCTION sql_immutable_pure(a int, b int) RETURNS int
LANGUAGE sql IMMUTABLE AS $$ SELECT a * b + 1 $$;
-- IMMUTABLE calling now() (STABLE): flagged (STABLE).
CREATE FUNCTION sql_immutable_now() RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$ SELECT now() $$;
-- VOLATILE read-only, through a sub-query and a CTE: flagged (STABLE).
CREATE FUNCTION sql_volatile_reads(n int) RETURNS numeric
LANGUAGE sql AS $$
    WITH big AS (SELECT balance FROM accounts WHERE id = n)
    SELECT balance * (SELECT rate FROM rates LIMIT 1) FROM big
$$;
-- VOLATILE read-only that calls now(): STABLE is right, flagged.
CREATE FUNCTION sql_volatile_reads_now() RETURNS bigint
LANGUAGE sql AS $$ SELECT count(*) FROM accounts WHERE now() > '2000-01-01' $$;
-- VOLATILE reading a view: flagged, naming the view and its table.
CREATE FUNCTION sql_volatile_view() RETURNS bigint
LANGUAGE sql AS $$ SELECT count(*) FROM rich_accounts $$;
-- VOLATILE that writes: fine.
CREATE FUNCTION sql_volatile_inserts(w text) RETURNS void
LANGUAGE sql AS $$ INSERT INTO audit_log VALUES (now(), w) $$;
-- VOLATILE read, then a write inside a data-modifying CTE: fine.
CREATE FUNCTION sql_volatile_cte_write() RETURNS bigint
LANGUAGE sql AS $$
    WITH d AS (DELETE FROM audit_log RETURNING 1) SELECT count(*) FROM d
$$;
-- VOLATILE reading, calling nextval / random: fine.
CREATE FUNCTION sql_volatile_nextval() RETURNS bigint
LANGUAGE sql AS $$ SELECT nextval('ticket_seq') + count(*) FROM accounts $$;
CREATE FUNCTION sql_volatile_random() RETURNS numeric
LANGUAGE sql AS $$ SELECT balance * random() FROM accounts LIMIT 1 $$;
-- VOLATILE SELECT ... FOR UPDATE: fine (it locks rows).
CREATE FUNCTION sql_volatile_for_update(n int) RETURNS numeric
LANGUAGE sql AS $$ SELECT balance FROM accounts WHERE id = n FOR UPDATE $$;
-- VOLATILE with a utility statement: fine.
CREATE FUNCTION sql_volatile_notify() RETURNS void
LANGUAGE sql AS $$ NOTIFY audit_demo_channel $$;
-- STABLE read-only: fine.
CREATE FUNCTION sql_stable_reads(n int) RETURNS numeric
LANGUAGE sql STABLE AS $$ SELECT balance FROM accounts WHERE id = n $$;
-- STABLE that writes: flagged (VOLATILE).
CREATE FUNCTION sql_stable_writes(n int) RETURNS void
LANGUAGE sql STABLE AS $$ UPDATE accounts SET balance = balance + 1 WHERE id = n $$;
-- Polymorphic (raw-parse route): VOLATILE read-only, flagged.
CREATE FUNCTION sql_poly_reads(x anyelement) RETURNS bigint
LANGUAGE sql AS $$ SELECT count(*) FROM accounts WHERE x IS NOT NULL $$;

------------------------------------------------------------------------------------------
-- SQL, BEGIN ATOMIC and RETURN bodies
------------------------------------------------------------------------------------------
-- IMMUTABLE reading a table: flagged.
CREATE FUNCTION atomic_immutable_reads(c text) RETURNS numeric
LANGUAGE sql IMMUTABLE BEGIN ATOMIC SELECT rate FROM rates WHERE currency = c; END;
-- IMMUTABLE pure (RETURN form): fine.
CREATE FUNCTION atomic_immutable_pure(a int) RETURNS int
LANGUAGE sql IMMUTABLE RETURN a + 1;
-- VOLATILE read-only over two statements: flagged.
CREATE FUNCTION atomic_volatile_reads(n int) RETURNS numeric
LANGUAGE sql BEGIN ATOMIC
    SELECT count(*) FROM rates;
    SELECT balance FROM accounts WHERE id = n;
END;
-- VOLATILE that reads, then writes: fine.
CREATE FUNCTION atomic_volatile_writes(n int) RETURNS void
LANGUAGE sql BEGIN ATOMIC
    SELECT balance FROM accounts WHERE id = n;
    UPDATE accounts SET balance = 0 WHERE id = n;
END;

------------------------------------------------------------------------------------------
-- PL/pgSQL
------------------------------------------------------------------------------------------
-- IMMUTABLE reading a table with SELECT INTO: flagged.
CREATE FUNCTION plpgsql_immutable_reads(c text) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE r numeric;
BEGIN
    SELECT rate INTO r FROM rates WHERE currency = c;
    RETURN r;
END $$;
-- IMMUTABLE pure, with RAISE NOTICE (not a side effect that matters): fine.
CREATE FUNCTION plpgsql_immutable_pure(a int) RETURNS int
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF a < 0 THEN
        RAISE NOTICE 'negative: %', a;
    END IF;
    RETURN abs(a) * 2;
END $$;
-- VOLATILE read-only through a FOR loop over a query: flagged.
CREATE FUNCTION plpgsql_volatile_for_loop() RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE total numeric := 0; r record;
BEGIN
    FOR r IN SELECT balance FROM accounts LOOP
        total := total + r.balance;
    END LOOP;
    RETURN total;
END $$;
-- VOLATILE read-only through RETURN QUERY, with now() (STABLE): flagged.
CREATE FUNCTION plpgsql_volatile_return_query() RETURNS SETOF numeric
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY SELECT rate FROM rates WHERE now() > '2000-01-01';
END $$;
-- VOLATILE read-only through a bound cursor and an assignment with a sub-query: flagged.
CREATE FUNCTION plpgsql_volatile_cursor() RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE
    cur CURSOR FOR SELECT balance FROM accounts;
    best numeric;
BEGIN
    best := (SELECT max(rate) FROM rates);
    FOR r IN cur LOOP
        best := greatest(best, r.balance);
    END LOOP;
    RETURN best;
END $$;
-- VOLATILE read-only, polymorphic: flagged.
CREATE FUNCTION plpgsql_poly_reads(x anyelement) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT count(*) FROM accounts WHERE x IS NOT NULL);
END $$;
-- Nested block writing in a branch: fine.
CREATE FUNCTION plpgsql_nested_write(n int) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE b numeric;
BEGIN
    SELECT balance INTO b FROM accounts WHERE id = n;
    BEGIN
        IF b < 0 THEN
            INSERT INTO audit_log VALUES (now(), 'negative balance');
        END IF;
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'could not log';
    END;
    RETURN b;
END $$;
-- SELECT ... FOR UPDATE: fine.
CREATE FUNCTION plpgsql_for_update(n int) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE b numeric;
BEGIN
    SELECT balance INTO b FROM accounts WHERE id = n FOR UPDATE;
    RETURN b;
END $$;
-- Dynamic EXECUTE (cannot see into it): fine.
CREATE FUNCTION plpgsql_dynamic(t text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %I', t) INTO n;
    RETURN n;
END $$;
-- Reads and calls nextval / pg_advisory_xact_lock: fine.
CREATE FUNCTION plpgsql_nextval() RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(42);
    RETURN nextval('ticket_seq') + (SELECT count(*) FROM accounts);
END $$;
-- Reads and calls another user VOLATILE function: fine.
CREATE FUNCTION plpgsql_calls_volatile() RETURNS numeric
LANGUAGE plpgsql AS $$
BEGIN
    RETURN sql_volatile_reads(1) + (SELECT count(*) FROM rates);
END $$;
-- STABLE read-only: fine.
CREATE FUNCTION plpgsql_stable_reads(n int) RETURNS numeric
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT balance FROM accounts WHERE id = n);
END $$;
-- STABLE that inserts in a loop: flagged (VOLATILE).
CREATE FUNCTION plpgsql_stable_writes() RETURNS void
LANGUAGE plpgsql STABLE AS $$
BEGIN
    FOR i IN 1..3 LOOP
        INSERT INTO audit_log VALUES (now(), 'tick');
    END LOOP;
END $$;
-- IMMUTABLE calling random(): flagged (VOLATILE).
CREATE FUNCTION plpgsql_immutable_random() RETURNS float8
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN random();
END $$;
-- Trigger functions are not audited (their volatility does not put them inside queries).
CREATE FUNCTION plpgsql_trigger() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM count(*) FROM rates;
    RETURN NEW;
END $$;
-- A body that no longer analyses (its table is gone): reported, suggestion NULL.
CREATE TABLE doomed (x int);
CREATE FUNCTION sql_broken() RETURNS bigint
LANGUAGE sql AS $$ SELECT count(*) FROM doomed $$;
DROP TABLE doomed;

RESET search_path;

-- The audit of the demo schema.
SELECT func, declared, suggested, reason
  FROM ck.volatility_audit('audit_demo') ORDER BY func::text COLLATE "C";

-- Correctly labelled functions produce no row.
SELECT p.oid::regprocedure AS not_reported
  FROM pg_proc p
 WHERE p.pronamespace = 'audit_demo'::regnamespace
   AND p.oid NOT IN (SELECT func FROM ck.volatility_audit('audit_demo'))
 ORDER BY p.oid::regprocedure::text COLLATE "C";

-- Without a schema: the demo schema is included, ck and pg_catalog are not.
SELECT count(*) FILTER (WHERE func::text LIKE 'audit_demo.%') AS demo_rows,
       count(*) FILTER (WHERE func::text LIKE 'ck.%') AS ck_rows,
       count(*) FILTER (WHERE pronamespace = 'pg_catalog'::regnamespace) AS catalog_rows
  FROM ck.volatility_audit() a JOIN pg_proc p ON p.oid = a.func;

-- The audit takes no lasting lock and leaves search_path alone.
BEGIN;
SELECT count(*) > 0 AS found FROM ck.volatility_audit('audit_demo');
SELECT count(*) AS relation_locks_held
  FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
 WHERE l.pid = pg_backend_pid() AND c.relnamespace = 'audit_demo'::regnamespace;
SHOW search_path;
COMMIT;

-- Bad input.
SELECT test.outcome($$SELECT * FROM ck.volatility_audit('no_such_schema')$$);

SET client_min_messages = warning;
DROP SCHEMA audit_demo CASCADE;
RESET client_min_messages;
