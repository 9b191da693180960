-- Immune to the caller's search_path by construction (0.2.0: no function has a SET clause).
-- Every function family runs twice on the same fixture: once under a plain search_path,
-- once with a hostile schema ahead of pg_catalog that holds, for every type the extension
-- compares or computes with, operators of the same names that raise, raising functions
-- named like the functions it calls, types named like the types it casts to, and tables
-- named like the user's and the extension's. Both runs must give the same answers. Each
-- run starts in a new backend, so no plan prepared under the other path is reused.
SET client_min_messages = warning;   -- btree_gist may be there already (guard.sql)
CREATE EXTENSION IF NOT EXISTS citext SCHEMA public;
CREATE EXTENSION IF NOT EXISTS btree_gist SCHEMA public;
RESET client_min_messages;
CREATE SCHEMA app;           -- a user's type whose equality operator lives in the user's schema
CREATE TYPE app.code;
-- PostgreSQL's "only a shell" notices are not under test (18 adds a LINE 1: cursor to one).
SET client_min_messages = warning;
CREATE FUNCTION app.code_in(cstring) RETURNS app.code LANGUAGE internal IMMUTABLE STRICT AS 'int4in';
CREATE FUNCTION app.code_out(app.code) RETURNS cstring LANGUAGE internal IMMUTABLE STRICT AS 'int4out';
RESET client_min_messages;
CREATE TYPE app.code (INPUT = app.code_in, OUTPUT = app.code_out, LIKE = integer);
CREATE FUNCTION app.code_eq(app.code, app.code) RETURNS boolean LANGUAGE internal IMMUTABLE STRICT AS 'int4eq';
CREATE FUNCTION app.code_lt(app.code, app.code) RETURNS boolean LANGUAGE internal IMMUTABLE STRICT AS 'int4lt';
CREATE FUNCTION app.code_le(app.code, app.code) RETURNS boolean LANGUAGE internal IMMUTABLE STRICT AS 'int4le';
CREATE FUNCTION app.code_gt(app.code, app.code) RETURNS boolean LANGUAGE internal IMMUTABLE STRICT AS 'int4gt';
CREATE FUNCTION app.code_ge(app.code, app.code) RETURNS boolean LANGUAGE internal IMMUTABLE STRICT AS 'int4ge';
CREATE FUNCTION app.code_cmp(app.code, app.code) RETURNS integer LANGUAGE internal IMMUTABLE STRICT AS 'btint4cmp';
CREATE OPERATOR app.= (LEFTARG = app.code, RIGHTARG = app.code, FUNCTION = app.code_eq);
CREATE OPERATOR app.< (LEFTARG = app.code, RIGHTARG = app.code, FUNCTION = app.code_lt);
CREATE OPERATOR app.<= (LEFTARG = app.code, RIGHTARG = app.code, FUNCTION = app.code_le);
CREATE OPERATOR app.> (LEFTARG = app.code, RIGHTARG = app.code, FUNCTION = app.code_gt);
CREATE OPERATOR app.>= (LEFTARG = app.code, RIGHTARG = app.code, FUNCTION = app.code_ge);
CREATE OPERATOR CLASS app.code_ops DEFAULT FOR TYPE app.code USING btree AS
    OPERATOR 1 app.<, OPERATOR 2 app.<=, OPERATOR 3 app.=, OPERATOR 4 app.>=, OPERATOR 5 app.>,
    FUNCTION 1 app.code_cmp(app.code, app.code);
CREATE CAST (text AS app.code) WITH INOUT AS ASSIGNMENT;

-- The hostile schema.
CREATE SCHEMA evil;
CREATE FUNCTION evil.boom() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'evil object reached through the search_path';
END $$;
CREATE TYPE evil.mood AS ENUM ('bad');
DO $$
DECLARE
    comparable text[] := ARRAY['smallint', 'integer', 'bigint', 'numeric', 'real', 'double precision', 'text',
        'name', 'oid', '"char"', 'boolean', 'timestamptz', 'interval', 'bigint[]', 'jsonb', 'regclass',
        'public.citext', 'app.code', 'anyenum', 'tstzrange'];
    numbers text[] := ARRAY['smallint', 'integer', 'bigint', 'numeric', 'real'];
    t text; u text; op text; res text; n int := 0;
BEGIN
    -- operator (left, right, result)
    CREATE TEMP TABLE hostile_ops (op text, l text, r text, res text);
    FOREACH t IN ARRAY comparable LOOP
        FOREACH op IN ARRAY ARRAY['=', '<>', '<', '<=', '>', '>='] LOOP
            INSERT INTO hostile_ops VALUES (op, t, t, 'boolean');
        END LOOP;
    END LOOP;
    FOREACH t IN ARRAY numbers LOOP
        FOREACH u IN ARRAY numbers LOOP
            FOREACH op IN ARRAY ARRAY['+', '-', '*', '/'] LOOP
                INSERT INTO hostile_ops VALUES (op, t, u, t);
            END LOOP;
            IF t <> u THEN
                FOREACH op IN ARRAY ARRAY['=', '<>', '<', '<=', '>', '>='] LOOP
                    INSERT INTO hostile_ops VALUES (op, t, u, 'boolean');
                END LOOP;
            END IF;
        END LOOP;
    END LOOP;
    INSERT INTO hostile_ops VALUES
        ('+', 'timestamptz', 'interval', 'timestamptz'), ('-', 'timestamptz', 'interval', 'timestamptz'),
        ('-', 'timestamptz', 'timestamptz', 'interval'), ('+', 'interval', 'interval', 'interval'),
        ('||', 'text', 'text', 'text'), ('||', 'text', 'anynonarray', 'text'), ('||', 'anynonarray', 'text', 'text'),
        ('||', 'jsonb', 'jsonb', 'jsonb'), ('||', 'bigint[]', 'bigint[]', 'bigint[]'),
        ('->>', 'jsonb', 'text', 'text'), ('->', 'jsonb', 'text', 'jsonb'), ('?', 'jsonb', 'text', 'boolean'),
        ('~', 'text', 'text', 'boolean'), ('!~', 'text', 'text', 'boolean'), ('!~', 'name', 'text', 'boolean'),
        ('&&', 'tstzrange', 'tstzrange', 'boolean'), ('=', 'oid', 'regclass', 'boolean'),
        ('=', 'regclass', 'oid', 'boolean'), ('=', 'name', 'text', 'boolean');
    FOR op, t, u, res IN SELECT * FROM hostile_ops LOOP
        n := n + 1;
        EXECUTE format('CREATE FUNCTION evil.op_%s(%s, %s) RETURNS %s LANGUAGE plpgsql AS '
                       '$f$BEGIN PERFORM evil.boom(); RETURN NULL; END$f$', n, t, u,
                       CASE WHEN res = 'anynonarray' THEN 'text' ELSE res END);
        EXECUTE format('CREATE OPERATOR evil.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = evil.op_%s)', op, t, u, n);
    END LOOP;
    RAISE NOTICE 'hostile operators: %', n;
END $$;
-- functions named like those the extension calls (all but concat, format's cousins and
-- jsonb_build_object, whose VARIADIC "any" only C can declare)
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.nextval(regclass) RETURNS bigint LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.to_jsonb(anyelement) RETURNS jsonb LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.unnest(anyarray) RETURNS SETOF anyelement LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); END$$;
CREATE FUNCTION evil.jsonb_populate_record(anyelement, jsonb) RETURNS anyelement LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.jsonb_typeof(jsonb) RETURNS text LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.jsonb_path_query(jsonb, jsonpath) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); END$$;
CREATE FUNCTION evil.isempty(anyrange) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.lower(anyrange) RETURNS anyelement LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.pg_relation_size(regclass) RETURNS bigint LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.current_setting(text) RETURNS text LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.quote_ident(text) RETURNS text LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.format(text, VARIADIC text[]) RETURNS text LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.pg_notify(text, text) RETURNS void LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); END$$;
CREATE FUNCTION evil.pg_backend_pid() RETURNS integer LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.pg_identify_object(oid, oid, integer) RETURNS record LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE FUNCTION evil.boom_count(bigint) RETURNS bigint LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE AGGREGATE evil.count(*) (SFUNC = evil.boom_count, STYPE = bigint, INITCOND = 0);
CREATE FUNCTION evil.boom_min(timestamptz, timestamptz) RETURNS timestamptz LANGUAGE plpgsql AS $$BEGIN PERFORM evil.boom(); RETURN NULL; END$$;
CREATE AGGREGATE evil.min(timestamptz) (SFUNC = evil.boom_min, STYPE = timestamptz);
CREATE FUNCTION evil.dense_rank() RETURNS bigint LANGUAGE internal WINDOW AS 'window_row_number';
-- types named like the types the extension casts to
CREATE DOMAIN evil.text AS evil.mood;
CREATE DOMAIN evil.jsonb AS evil.mood;
CREATE DOMAIN evil.numeric AS evil.mood;
CREATE DOMAIN evil.name AS evil.mood;
CREATE DOMAIN evil.regclass AS evil.mood;
CREATE DOMAIN evil.int4 AS evil.mood;
-- tables named like the user's and the extension's
CREATE TABLE evil.stock (sku integer PRIMARY KEY, qty integer);
CREATE TABLE evil.jobs (id bigint PRIMARY KEY);
CREATE TABLE evil.queues (queue regclass);
CREATE TABLE evil.lock_namespaces (id integer, name text);
CREATE SEQUENCE evil.lease_tokens;

-- A trigger on the decremented table writes to an unqualified table that only the caller's
-- search_path finds (public.audit_log); in 0.1.0 the pinned search_path hid it.
CREATE TABLE public.audit_log (sku integer, qty integer);
CREATE FUNCTION public.log_stock() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_log (sku, qty) VALUES (NEW.sku, NEW.qty);
    RETURN NULL;
END $$;

-- The fixture, made afresh before each run under a plain search_path.
CREATE FUNCTION public.sp_fixture() RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    DROP SCHEMA IF EXISTS shop CASCADE;
    PERFORM ck.drop_queue(q.queue) FROM ck.queues q WHERE q.queue::text LIKE 'shop.%';
    TRUNCATE public.audit_log;
    CREATE SCHEMA shop;
    CREATE TABLE shop.stock (sku integer PRIMARY KEY, qty integer NOT NULL);
    INSERT INTO shop.stock VALUES (1, 10), (2, 3);
    CREATE TRIGGER log_stock AFTER UPDATE ON shop.stock FOR EACH ROW EXECUTE FUNCTION public.log_stock();
    CREATE TABLE shop.counters (id bigint PRIMARY KEY, small smallint, big bigint, exact numeric(12, 2));
    INSERT INTO shop.counters VALUES (1, 5, 5000000000, 5.50);
    CREATE TYPE shop.seat_state AS ENUM ('free', 'held', 'sold');
    CREATE TABLE shop.seats (id integer PRIMARY KEY, state shop.seat_state NOT NULL);
    INSERT INTO shop.seats VALUES (1, 'free'), (2, 'held');
    CREATE TABLE shop.codes (code app.code PRIMARY KEY, label public.citext NOT NULL);
    INSERT INTO shop.codes VALUES ('7', 'New'), ('8', 'used');
    CREATE TABLE shop.docs (code app.code PRIMARY KEY, body public.citext, n integer, version integer NOT NULL DEFAULT 1);
    INSERT INTO shop.docs VALUES ('7', 'draft', 1);
    CREATE TABLE shop.tagged (tag public.citext PRIMARY KEY, uses integer NOT NULL);
    INSERT INTO shop.tagged VALUES ('Blue', 2);
    CREATE TABLE shop.bookings (id integer PRIMARY KEY, room integer, during tstzrange);
    INSERT INTO shop.bookings VALUES (1, 1, '[2030-01-01 10:00+00,2030-01-01 11:00+00)'),
        (2, 1, '[2030-01-01 10:30+00,2030-01-01 12:00+00)'), (3, 2, '[2030-01-01 10:00+00,2030-01-01 11:00+00)');
    CREATE TABLE shop.rooms (id integer PRIMARY KEY, room integer, during tstzrange);
    INSERT INTO shop.rooms VALUES (1, 1, '[2030-01-01 10:00+00,2030-01-01 11:00+00)');
    CREATE FUNCTION shop.qty_of(integer) RETURNS integer LANGUAGE sql VOLATILE
        AS 'SELECT qty FROM shop.stock WHERE sku OPERATOR(pg_catalog.=) $1';
END $$;

-- sp_record(run, step, statement): runs the statement (one value, or none), shows and keeps
-- how it ended. Written without an operator or an unqualified function: it runs under the
-- hostile path too.
CREATE TABLE public.sp_results (run text, step text, outcome text);
CREATE FUNCTION public.sp_record(run text, step text, statement text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    result pg_catalog.text;      -- type names in PL/pgSQL resolve with the caller's path too
    outcome pg_catalog.text;
BEGIN
    BEGIN
        EXECUTE statement INTO result;
        outcome := pg_catalog.concat('ok: ', coalesce(result, 'NULL'));
    EXCEPTION WHEN OTHERS THEN
        outcome := pg_catalog.concat(SQLSTATE, ': ', SQLERRM);
    END;
    INSERT INTO public.sp_results VALUES (run, step, outcome);
    RETURN outcome;
END $$;

-- Run 1: a plain search_path.
\c
SELECT public.sp_fixture();
SET search_path = public;
\set run plain
\ir sql/search_path_calls.psql

-- Run 2: the hostile schema ahead of pg_catalog, in a new backend.
\c
SELECT public.sp_fixture();
SET search_path = evil, pg_catalog, public;
\set run hostile
\ir sql/search_path_calls.psql

-- The same answers, step by step (and none missing).
RESET search_path;
SELECT count(*) AS steps, count(DISTINCT step) AS distinct_steps FROM sp_results WHERE run = 'plain';
SELECT p.step, p.outcome AS plain, h.outcome AS hostile
FROM (SELECT * FROM sp_results WHERE run = 'plain') AS p
FULL JOIN (SELECT * FROM sp_results WHERE run = 'hostile') AS h USING (step)
WHERE p.outcome IS DISTINCT FROM h.outcome;
SELECT count(*) AS evil_reached FROM sp_results WHERE outcome LIKE '%evil object%';

SET client_min_messages = warning;
SELECT public.sp_fixture();
DROP SCHEMA shop CASCADE;
DROP SCHEMA evil CASCADE;
DROP TABLE public.sp_results, public.audit_log;
DROP FUNCTION public.sp_record(text, text, text), public.sp_fixture(), public.log_stock();
RESET client_min_messages;
