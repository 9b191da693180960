-- Sample database for test/chaos/privileges.sh, run as a superuser in a fresh database:
--   psql -v owner=ck_priv_owner -v user=ck_priv_user -v other=ck_priv_other -f privileges_schema.sql
-- Schema app and everything in it belong to :"owner"; :"user" is the role whose rights the
-- matrix varies; :"other" owns a queue of its own.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION concurrency_kit;
CREATE EXTENSION btree_gist;   -- installed up front: add_overlap_guard would need CREATE on the database
CREATE SCHEMA app AUTHORIZATION :"owner";
CREATE SCHEMA usr AUTHORIZATION :"user";
CREATE SCHEMA oth AUTHORIZATION :"other";

SET ROLE :"owner";
CREATE TABLE app.stock (sku integer PRIMARY KEY, qty integer NOT NULL, code text UNIQUE, state text NOT NULL DEFAULT 'a');
INSERT INTO app.stock (sku, qty, code) SELECT i, 1000000, 'sku-' || i FROM generate_series(1, 10) AS i;
CREATE TABLE app.bookings (id integer PRIMARY KEY, room integer NOT NULL, during tstzrange NOT NULL);
INSERT INTO app.bookings
SELECT i, i % 3, tstzrange('2030-01-01'::timestamptz + i * interval '1 hour', '2030-01-01'::timestamptz + (i + 1) * interval '1 hour')
FROM generate_series(1, 30) AS i;
SELECT ck.create_queue('app.jobs', max_attempts => 5);
SELECT ck.create_queue('app.mail', max_attempts => 1);
SELECT ck.create_queue('app.empty');
SELECT ck.create_queue('app.lim');
SELECT ck.set_concurrency_limit('app.lim', 'k', 1);
SELECT ck.create_queue('app.pk');   -- pause and resume of a key (1.1.0): each cell sets its key up
SELECT count(ck.enqueue('app.jobs', '{}')) FROM generate_series(1, 2000);
SELECT count(ck.enqueue('app.mail', '{}')) FROM generate_series(1, 1000);
SELECT count(ck.fail('app.mail', c.id, c.lease_token, 'dead')) FROM ck.claim('app.mail', 200) AS c;
CREATE FUNCTION app.reads() RETURNS bigint LANGUAGE sql VOLATILE AS 'SELECT count(*) FROM app.stock';
RESET ROLE;

SET ROLE :"other";
SELECT ck.create_queue('oth.theirs');
RESET ROLE;

-- A namespace registered (and committed) before any test session starts.
SELECT ck.lock_namespace('registered');

-- What must not change when a call is refused. Sequences are left out (nextval is not
-- rolled back).
CREATE SCHEMA chaos;
CREATE FUNCTION chaos.state() RETURNS text LANGUAGE sql VOLATILE AS $$
    SELECT pg_catalog.md5(pg_catalog.concat_ws('/',
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM app.stock AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM app.bookings AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM app.jobs AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM app.jobs_dead AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM app.mail AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM app.mail_dead AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM app.empty AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM app.lim AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM app.pk AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM ck.paused_keys AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM ck.concurrency_slots AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM ck.queues AS t),
        (SELECT pg_catalog.string_agg(t::text, ',' ORDER BY t::text) FROM ck.lock_namespaces AS t),
        (SELECT pg_catalog.string_agg(c.oid::regclass::text || c.relkind::text, ',' ORDER BY c.oid)
         FROM pg_catalog.pg_class AS c
         WHERE c.relnamespace IN ('app'::regnamespace, 'usr'::regnamespace, 'oth'::regnamespace)),
        (SELECT pg_catalog.string_agg(k.conname::text, ',' ORDER BY k.oid) FROM pg_catalog.pg_constraint AS k
         WHERE k.connamespace IN ('app'::regnamespace, 'usr'::regnamespace, 'oth'::regnamespace))))
$$;
