-- Sample database for test/chaos/fuzz.sh: the extension and tables of every kind its
-- functions work on, owned by the (non-superuser) fuzzing role :"role". Run as a superuser
-- in a fresh database: psql -v role=ck_fuzz -f fuzz_schema.sql.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION concurrency_kit;
CREATE EXTENSION btree_gist;          -- the overlap guard's scalar key (room)
CREATE EXTENSION file_fdw;            -- a foreign table (needs a superuser to make)
CREATE SERVER files FOREIGN DATA WRAPPER file_fdw;
CREATE FOREIGN TABLE ft (sku integer, q4 integer, during tstzrange) SERVER files
    OPTIONS (filename '/dev/null', format 'csv');
ALTER FOREIGN TABLE ft OWNER TO :"role";
GRANT CREATE ON SCHEMA public TO :"role";
-- ck.race_reports_reset is a superuser's unless granted: granted, so the fuzzers reach it too.
GRANT EXECUTE ON FUNCTION ck.race_reports_reset() TO :"role";
SET ROLE :"role";

-- Queues: one with jobs in every state (ready, scheduled, leased, expired, dead), one that notifies.
SELECT ck.create_queue('jobs', lease => '30 seconds', max_attempts => 3);
SELECT ck.set_history('jobs', '1 day');   -- jobs keeps a history (1.1.0), mail none: both kinds of acknowledgement
SELECT ck.create_queue('mail', lease => '1 second', max_attempts => 1, notify => true);
-- a queue table that lost its registration, as DROP EXTENSION ... CASCADE leaves one: for ck.adopt_queue
SELECT ck.create_queue('orphan');
DELETE FROM ck.queues WHERE queue = 'orphan'::regclass;
SELECT count(ck.enqueue('jobs', pg_catalog.jsonb_build_object('n', i), now() + (i % 7 - 3) * interval '1 hour', i % 5 - 2))
FROM generate_series(1, 300) AS i;
SELECT count(ck.enqueue('mail', '{"to": "ann@example.com"}')) FROM generate_series(1, 50);
-- mail is limited to 2 jobs per tenant at once (its trigger ck_left hands slots on), and some of
-- its jobs carry tenants: parked jobs too.
SELECT ck.set_concurrency_limit('mail', NULL, 2);
SELECT count(ck.enqueue('mail', '{"to": "bob@example.com"}', concurrency_key => 'tenant:' || i % 3)) FROM generate_series(1, 12) AS i;
SELECT count(*) FROM ck.claim('jobs', 20);
SELECT count(*) FROM ck.claim('jobs', 5, '1 microsecond');           -- leases that expire at once
SELECT count(ck.fail('jobs', c.id, c.lease_token, 'boom', '0 seconds')) FROM ck.claim('jobs', 10) AS c;
SELECT count(*) FROM ck.claim('mail', 5);
SELECT count(ck.fail('mail', c.id, c.lease_token, 'dead at once')) FROM ck.claim('mail', 5) AS c;

-- Counters of every supported type, at and near their bounds; states as enum, text, varchar.
CREATE TYPE mood AS ENUM ('free', 'held', 'booked', 'cancelled');
CREATE DOMAIN qty AS integer CHECK (VALUE >= 0);
CREATE TABLE stock (
    sku    integer PRIMARY KEY,
    q2     smallint NOT NULL DEFAULT 10,
    q4     integer NOT NULL DEFAULT 10,
    q8     bigint NOT NULL DEFAULT 10,
    qn     numeric NOT NULL DEFAULT 10,
    qd     qty NOT NULL DEFAULT 10,
    code   text UNIQUE,
    state  mood NOT NULL DEFAULT 'free',
    status text NOT NULL DEFAULT 'free',
    label  varchar(8) NOT NULL DEFAULT 'free'
);
INSERT INTO stock (sku, code) SELECT i, 'sku-' || i FROM generate_series(1, 100) AS i;
INSERT INTO stock (sku, q2, q4, q8, qn, qd, code) VALUES
    (1001, 32767, 2147483647, 9223372036854775807, 1e100, 2147483647, 'max'),
    (1002, -32768, -2147483648, -9223372036854775808, -1e100, 0, 'min'),
    (1003, 32766, 2147483646, 9223372036854775806, 'NaN', 1, 'near-max'),
    (1004, 0, 0, 0, 0.5, 0, 'zero');

-- Bookings with a tstzrange and an overlap guard by room.
CREATE TABLE bookings (id integer PRIMARY KEY, room integer NOT NULL, during tstzrange);
INSERT INTO bookings
SELECT i, i % 10, tstzrange('2030-01-01'::timestamptz + i * interval '1 hour', '2030-01-01'::timestamptz + (i + 1) * interval '1 hour')
FROM generate_series(1, 200) AS i;
SELECT ck.add_overlap_guard('bookings', 'during', '{room}');
-- the same without a guard, with overlaps, a multirange and a bigint key
CREATE TABLE slots (id bigint PRIMARY KEY, room integer, during tstzrange, busy tstzmultirange, n int4range);
INSERT INTO slots
SELECT i, i % 3, tstzrange('2030-01-01'::timestamptz + i * interval '30 minutes', '2030-01-01'::timestamptz + (i + 2) * interval '30 minutes'),
       tstzmultirange(tstzrange('2030-01-01', '2030-01-02')), int4range(i, i + 3)
FROM generate_series(1, 100) AS i;

CREATE TABLE orders (id bigint PRIMARY KEY, state mood NOT NULL DEFAULT 'free', note text);
INSERT INTO orders (id) SELECT generate_series(1, 100);

-- Relations of every other kind, and a column dropped from stock.
CREATE VIEW stock_v AS SELECT * FROM stock;
CREATE MATERIALIZED VIEW stock_mv AS SELECT * FROM stock;
CREATE TYPE comp AS (sku integer, q4 integer);
CREATE TABLE part (id integer PRIMARY KEY, q4 integer NOT NULL DEFAULT 10, state mood NOT NULL DEFAULT 'free',
                   during tstzrange) PARTITION BY RANGE (id);
CREATE TABLE part_1 PARTITION OF part FOR VALUES FROM (0) TO (1000);
INSERT INTO part (id, during) SELECT i, tstzrange(now(), now() + interval '1 hour') FROM generate_series(1, 20) AS i;
ALTER TABLE stock ADD COLUMN gone integer;
ALTER TABLE stock DROP COLUMN gone;

-- Lock namespaces.
SELECT ck.lock_namespace('outbox'), ck.lock_namespace('migrator');

-- Values for sqlsmith to draw arguments from: it takes column references of the right type
-- from the tables in scope, so real tables, columns, keys and hostile values sit here.
CREATE TABLE fuzz_values (
    rel    regclass,
    col    name,
    keycol name,
    ikey   integer,
    bkey   bigint,
    tkey   text,
    amount bigint,
    bound  numeric,
    iv     interval,
    js     jsonb,
    cols   name[],
    ids    bigint[],
    toks   bigint[],
    state  text,
    nsname text,
    ns     integer,
    sql    text
);
INSERT INTO fuzz_values VALUES
    ('stock', 'q4', NULL, 1, 1, 'sku-1', 1, 100, '1 second', '{}', '{}', '{}', '{}', 'free', 'outbox', 1, 'SELECT 1'),
    ('stock', 'q2', 'sku', 1001, 1001, 'max', 1, 32767, '30 seconds', '{"a": 1}', '{sku}', '{1,2}', '{1,2}', 'held', 'migrator', 2, 'SELECT * FROM stock WHERE q4 > 0'),
    ('stock', 'q8', 'code', 1002, 9223372036854775807, 'min', 9223372036854775807, 1e100, '-1 second', 'null', '{q4,q8}', '{NULL}', '{NULL}', 'booked', '', -1, 'SELECT 1/0'),
    ('stock', 'qn', NULL, -2147483648, -9223372036854775808, NULL, -1, 'NaN', '2147483647 days', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    ('stock', 'qd', 'state', 2147483647, 0, '', 0, '-Infinity', '-2147483648 days', '[]', '{""}', '{1}', '{1,2,3}', '', repeat('x', 64), 2147483647, ''),
    ('stock', 'state', 'label', 0, 2147483648, 'sku-2', 32768, 0, '0', '"x"', '{nope}', '{}', '{}', 'cancelled', 'ns-' || repeat('é', 40), -2147483648, 'COMMIT'),
    ('bookings', 'during', 'room', 3, 3, NULL, 2, 1e-100, '1 microsecond', '{}', '{room}', '{-1}', '{-1}', 'nope', 'outbox', 0, 'SELECT * FROM bookings'),
    ('slots', 'busy', NULL, 4, 4, NULL, 2, 1, '1000 years', '{}', '{room,id}', NULL, NULL, NULL, 'x', 3, 'DROP TABLE stock'),
    ('jobs', 'priority', 'id', 5, 5, NULL, 2, 1, '1 mon -30 days', '{}', '{priority}', '{1,2,3}', '{1,2,3}', NULL, 'y', 3, 'UPDATE jobs SET priority = 0'),
    ('jobs_dead', 'attempts', NULL, 6, 6, NULL, 2, 1, '-178000000 years', '{}', '{}', '{}', '{}', NULL, 'z', 3, 'SELECT ck.current_attempt()'),
    ('mail', 'attempts', NULL, 7, 7, NULL, 2, 1, '178000000 years', '{}', '{}', '{}', '{}', NULL, 'w', 3, 'SELECT pg_catalog.pg_advisory_xact_lock(1)'),
    ('orders', 'state', 'id', 8, 8, NULL, 1, 10, '0.000001 seconds', '{}', '{}', '{}', '{}', 'held', 'outbox', 1, 'INSERT INTO orders (id) VALUES (-1)'),
    ('ck.queues', 'lease', NULL, 9, 9, NULL, 1, 10, '1 day', '{}', '{}', '{}', '{}', NULL, 'outbox', 1, 'SELECT 1; SELECT 2'),
    ('ck.lock_namespaces', 'id', 'name', 10, 10, 'outbox', 1, 10, '1 day', '{}', '{name}', '{}', '{}', NULL, 'outbox', 1, 'VACUUM'),
    ('pg_class', 'relpages', 'oid', 11, 11, NULL, 1, 10, '1 day', '{}', '{}', '{}', '{}', NULL, 'outbox', 1, 'EXPLAIN SELECT 1'),
    ('fuzz_values', 'ikey', NULL, 12, 12, NULL, 1, 10, '1 day', '{}', '{}', '{}', '{}', NULL, 'outbox', 1, 'SELECT');
RESET ROLE;
