-- Hostile calls of every ck function, run by test/chaos/fuzz_hostile.sh as the (non-superuser)
-- owner of the sample database of test/chaos/fuzz_schema.sql, in one session, in this order.
-- A line ending in "-- expect: ..." is a call, judged (see fuzz_hostile.sh): SQLSTATE[|...],
-- "ok", "= VALUE", alternatives joined by " or ". Other lines are set-up and must not fail.
-- :'other_tmp' and :'other_q' are a temporary table and a queue of another session (which
-- also holds the advisory locks (1, 77) and (77, 77)); plain SQL on them fails with 42501 for
-- a user who is not a superuser (no USAGE on the other session's pg_temp_N), 0A000 for one.
--
-- What fits: 22004 for a NULL argument, 22023 for a value out of range, 42P01 for a relation
-- that does not exist, 42809 for one of the wrong kind, 42703 for a missing column, 42804 for
-- a wrong type, 42P10 for a key that does not address one row, 42501 for a missing right,
-- 0A000 for what PostgreSQL does not support (another session's temporary table), the
-- domain codes CK001-CK006, and PostgreSQL's own codes for errors of the statement run.

-- Set-up: more tables of the kinds a call may meet.
CREATE TEMP TABLE my_tmp (id integer PRIMARY KEY, q4 integer NOT NULL DEFAULT 10, during tstzrange);
INSERT INTO my_tmp (id) VALUES (1);
CREATE TABLE nopk (id integer, q integer NOT NULL DEFAULT 10);
CREATE UNIQUE INDEX nopk_partial ON nopk (id) WHERE id > 0;
INSERT INTO nopk (id) VALUES (1);
CREATE TABLE cpk (a integer, b integer, q integer NOT NULL DEFAULT 10, PRIMARY KEY (a, b));
INSERT INTO cpk (a, b) VALUES (1, 1);
CREATE TABLE expk (id integer NOT NULL, q integer NOT NULL DEFAULT 10);
CREATE UNIQUE INDEX expk_abs ON expk (abs(id));
INSERT INTO expk (id) VALUES (1);
CREATE DOMAIN small_qty AS integer CHECK (VALUE <= 100);
CREATE DOMAIN sku_d AS integer;
CREATE DOMAIN state_d AS text CHECK (VALUE IN ('free', 'held', 'booked'));
CREATE TABLE capped (id sku_d PRIMARY KEY, c small_qty NOT NULL, s state_d NOT NULL DEFAULT 'free');
INSERT INTO capped VALUES (1, 98);
CREATE TABLE jt (id integer PRIMARY KEY, j json, p point);
INSERT INTO jt VALUES (1, '{}', '(0,0)');
CREATE TABLE gen (id integer PRIMARY KEY, a integer NOT NULL DEFAULT 1, b integer GENERATED ALWAYS AS (a * 2) STORED);
INSERT INTO gen (id) VALUES (1);
CREATE TABLE "Weird Table" ("Key" integer PRIMARY KEY, "Q ty" integer NOT NULL DEFAULT 10, "sta""te" text NOT NULL DEFAULT 'a');
INSERT INTO "Weird Table" ("Key") VALUES (1);
CREATE TABLE rls_t (id integer PRIMARY KEY, q integer NOT NULL DEFAULT 10);
INSERT INTO rls_t (id) VALUES (1), (2);
ALTER TABLE rls_t ENABLE ROW LEVEL SECURITY;
ALTER TABLE rls_t FORCE ROW LEVEL SECURITY;
CREATE POLICY rls_t_some ON rls_t USING (id > 1);
CREATE TABLE inh_p (id integer PRIMARY KEY, q integer NOT NULL DEFAULT 10);
CREATE TABLE inh_c () INHERITS (inh_p);
INSERT INTO inh_p (id) VALUES (1);
INSERT INTO inh_c (id) VALUES (1);

------------------------------------------------------------------------------------------
-- Conditional change
------------------------------------------------------------------------------------------
-- NULL in every position
SELECT ck.try_decrement(NULL, 1, 'q4', 1); -- expect: 22004
SELECT ck.try_decrement('stock', 1, NULL, 1); -- expect: 22004
SELECT ck.try_decrement('stock', NULL::integer, 'q4', 1); -- expect: 22004
SELECT ck.try_decrement('stock', NULL, 'q4', 1); -- expect: 22004|42804
SELECT ck.try_decrement('stock', 1, 'q4', NULL); -- expect: 22004
SELECT ck.try_decrement('stock', 1, 'q4', 1, NULL); -- expect: = 9
SELECT ck.decrement(NULL, 1, 'q4', 1); -- expect: 22004
SELECT ck.decrement('stock', 1, NULL, 1); -- expect: 22004
SELECT ck.decrement('stock', NULL::integer, 'q4', 1); -- expect: 22004
SELECT ck.decrement('stock', 1, 'q4', NULL); -- expect: 22004
SELECT ck.try_increment(NULL, 1, 'q4', 1, 100); -- expect: 22004
SELECT ck.try_increment('stock', 1, NULL, 1, 100); -- expect: 22004
SELECT ck.try_increment('stock', NULL::integer, 'q4', 1, 100); -- expect: 22004
SELECT ck.try_increment('stock', 1, 'q4', NULL, 100); -- expect: 22004
SELECT ck.try_increment('stock', 1, 'q4', 1, NULL); -- expect: = 10
SELECT ck.increment(NULL, 1, 'q4', 1, 100); -- expect: 22004
SELECT ck.increment('stock', 1, 'q4', 1, NULL); -- expect: = 11
SELECT ck.try_transition(NULL, 1, 'state', 'free', 'held'); -- expect: 22004
SELECT ck.try_transition('stock', NULL::integer, 'state', 'free', 'held'); -- expect: 22004
SELECT ck.try_transition('stock', 1, NULL, 'free', 'held'); -- expect: 22004
SELECT ck.try_transition('stock', 1, 'state', NULL, 'held'); -- expect: 22004
SELECT ck.try_transition('stock', 1, 'state', 'free', NULL); -- expect: 22004
SELECT ck.transition(NULL, 1, 'state', 'free', 'held'); -- expect: 22004
SELECT ck.transition('stock', 1, 'state', 'free', NULL); -- expect: 22004
-- amounts
SELECT ck.try_decrement('stock', 1, 'q4', 0); -- expect: 22023
SELECT ck.try_decrement('stock', 1, 'q4', -1); -- expect: 22023
SELECT ck.try_decrement('stock', 1, 'q4', -9223372036854775808); -- expect: 22023
SELECT ck.try_increment('stock', 1, 'q4', 0, 100); -- expect: 22023
SELECT ck.increment('stock', 1, 'q4', -5, 100); -- expect: 22023
SELECT ck.try_decrement('stock', 1, 'q4', 9223372036854775807); -- expect: = <NULL>
SELECT ck.decrement('stock', 1, 'q4', 9223372036854775807); -- expect: CK001
-- every counter type at its bounds (row 1001: the maxima, 1002: the minima, 1003: max - 1):
-- the column type's maximum bounds an increment as upper_bound does
SELECT ck.try_increment('stock', 1003, 'q2', 1, 9223372036854775807); -- expect: = 32767
SELECT ck.try_increment('stock', 1003, 'q2', 1, 9223372036854775807); -- expect: = <NULL>
SELECT ck.increment('stock', 1003, 'q2'); -- expect: CK002
SELECT ck.try_increment('stock', 1, 'q2', 32767, 9223372036854775807); -- expect: = <NULL>
SELECT ck.try_increment('stock', 1001, 'q4', 1, 9223372036854775807); -- expect: = <NULL>
SELECT ck.try_increment('stock', 1001, 'q4', 1, 1e100); -- expect: 42883
SELECT ck.try_increment('stock', 1003, 'q4', 1, 2147483647); -- expect: = 2147483647
SELECT ck.try_increment('stock', 1003, 'q4', 1, 2147483647); -- expect: = <NULL>
SELECT ck.increment('stock', 1003, 'q4', 1, 2147483647); -- expect: CK002
SELECT ck.try_increment('stock', 1001, 'q8', 1); -- expect: = <NULL>
SELECT ck.try_increment('stock', 1, 'q8', 9223372036854775807, 9223372036854775807); -- expect: = <NULL>
SELECT ck.try_increment('stock', 1, 'q8', 1, -9223372036854775807); -- expect: = <NULL>
SELECT ck.try_increment('stock', 1002, 'q8', 9223372036854775807, 0); -- expect: = -1
SELECT ck.try_decrement('stock', 1001, 'q8', 9223372036854775807); -- expect: = 0
SELECT ck.try_decrement('stock', 1002, 'q2', 1); -- expect: = <NULL>
SELECT ck.decrement('stock', 1002, 'q2', 1); -- expect: CK001
SELECT ck.decrement('stock', 1002, 'q8', 1); -- expect: CK001
SELECT ck.try_decrement('stock', 1, 'q2', 32768); -- expect: = <NULL>
-- a numeric column is no counter (42804), nor is a numeric bound an argument (42883)
SELECT ck.try_increment('stock', 1001, 'qn', 1); -- expect: 42804
SELECT ck.try_increment('stock', 1001, 'qn', 1, 'Infinity'); -- expect: 22P02
SELECT ck.try_increment('stock', 1, 'qn', 1, 1e-100); -- expect: 42883
SELECT ck.try_decrement('stock', 1004, 'qn', 1); -- expect: 42804
SELECT ck.try_increment('stock', 1, 'qd', 1); -- expect: = 11
SELECT ck.try_increment('stock', 1001, 'qd', 1); -- expect: = <NULL>
SELECT ck.try_decrement('stock', 1004, 'qd', 1); -- expect: = <NULL>
SELECT ck.try_increment('capped', 1, 'c', 5, 1000); -- expect: 23514
SELECT ck.try_increment('capped', 1, 'c', 2, 1000); -- expect: = 100
-- NaN: not a bigint
SELECT ck.try_increment('stock', 2, 'q4', 1, 'NaN'); -- expect: 22P02
-- columns
SELECT ck.try_decrement('stock', 1, 'nope', 1); -- expect: 42703
SELECT ck.try_decrement('stock', 1, 'gone', 1); -- expect: 42703
SELECT ck.try_decrement('stock', 1, (SELECT attname FROM pg_attribute WHERE attrelid = 'stock'::regclass AND attisdropped), 1); -- expect: 42703
SELECT ck.try_decrement('stock', 1, 'ctid', 1); -- expect: 42703
SELECT ck.try_decrement('stock', 1, 'xmin', 1); -- expect: 42703
SELECT ck.try_decrement('stock', 1, 'Q4', 1); -- expect: 42703
SELECT ck.try_decrement('stock', 1, repeat('x', 200), 1); -- expect: 42703
SELECT ck.try_decrement('stock', 1, 'code', 1); -- expect: 42804
SELECT ck.try_decrement('stock', 1, 'state', 1); -- expect: 42804
SELECT ck.try_increment('bookings', 1, 'during', 1, 10); -- expect: 42804
SELECT ck.try_decrement('gen', 1, 'b', 1); -- expect: 428C9
-- (an identity column: plain UPDATE is refused by its analysis, 428C9, before any privilege check)
SELECT ck.try_decrement('ck.lock_namespaces', 1, 'id', 1); -- expect: 428C9
SELECT ck.try_decrement('"Weird Table"', 1, 'Q ty', 1); -- expect: = 9
SELECT ck.try_transition('"Weird Table"', 1, 'sta"te', 'a', 'b'); -- expect: = t
-- keys
SELECT ck.try_decrement('stock', 1, 'q4', 1, 'q8'); -- expect: 42P10
SELECT ck.try_decrement('stock', 1, 'q4', 1, 'nope'); -- expect: 42703
SELECT ck.try_decrement('stock', 'sku-3'::text, 'q4', 1, 'code'); -- expect: = 9
SELECT ck.try_decrement('stock', 'sku-3'::varchar, 'q4', 1, 'code'); -- expect: = 8
SELECT ck.try_decrement('stock', 'free'::mood, 'q4', 1, 'code'); -- expect: = <NULL>
SELECT ck.try_decrement('nopk', 1, 'q', 1); -- expect: 42P10
SELECT ck.try_decrement('nopk', 1, 'q', 1, 'id'); -- expect: 42P10
SELECT ck.try_decrement('cpk', 1, 'q', 1); -- expect: 42P10
SELECT ck.try_decrement('cpk', 1, 'q', 1, 'a'); -- expect: 42P10
SELECT ck.try_decrement('expk', 1, 'q', 1); -- expect: 42P10
SELECT ck.try_decrement('expk', 1, 'q', 1, 'id'); -- expect: 42P10
SELECT ck.try_decrement('stock', '{1}'::integer[], 'q4', 1); -- expect: 42804
SELECT ck.try_decrement('stock', now(), 'q4', 1); -- expect: 42804
SELECT ck.try_decrement('stock', '4'::text, 'q4', 1); -- expect: = 9
SELECT ck.try_decrement('stock', 'four'::text, 'q4', 1); -- expect: 22P02
SELECT ck.try_decrement('stock', 'four', 'q4', 1); -- expect: 22P02
SELECT ck.try_decrement('stock', 'qty', 4, 1); -- expect: 42883
SELECT ck.try_decrement('stock', 'q4', 'code-4', 1, 'code'); -- expect: 42703
SELECT ck.try_decrement('stock', ROW(1, 2), 'q4', 1); -- expect: 42804
SELECT ck.try_decrement('stock', '{}'::jsonb, 'q4', 1); -- expect: 42804
SELECT ck.try_decrement('stock', 5::smallint, 'q4', 1); -- expect: = 9
SELECT ck.try_decrement('stock', 5::bigint, 'q4', 1); -- expect: = 8
SELECT ck.try_decrement('stock', 2147483648, 'q4', 1); -- expect: = <NULL> or 22003
SELECT ck.try_decrement('stock', -9223372036854775808, 'q4', 1); -- expect: = <NULL> or 22003
-- a key of 1.5 addresses no row (plain SQL: WHERE sku = 1.5 matches nothing); rounding it to row 2 would change the wrong row
SELECT ck.try_decrement('stock', 1.5, 'q4', 1); -- expect: = <NULL> or 42804
SELECT ck.try_decrement('stock', 'NaN'::numeric, 'q4', 1); -- expect: = <NULL> or 42804|22003|0A000
SELECT ck.try_decrement('orders', 1::integer, 'id', 1); -- expect: = 0
SELECT ck.try_decrement('capped', 1, 'c', 1); -- expect: = 99
SELECT ck.try_transition('capped', 1, 's', 'free', 'nope'); -- expect: 23514
SELECT ck.try_transition('capped', 1, 's', 'free', 'held'); -- expect: = t
-- relations of every kind
SELECT ck.try_decrement(0, 1, 'q4', 1); -- expect: 42P01
SELECT ck.try_decrement('4294967295'::regclass, 1, 'q4', 1); -- expect: 42P01
SELECT ck.try_decrement('stock_v', 1, 'q4', 1); -- expect: 42809
SELECT ck.try_decrement('stock_mv', 1, 'q4', 1); -- expect: 42809
SELECT ck.try_decrement('comp', 1, 'q4', 1); -- expect: 42809
SELECT ck.try_decrement('ft', 1, 'q4', 1); -- expect: 42809
SELECT ck.try_decrement('stock_pkey', 1, 'q4', 1); -- expect: 42809
SELECT ck.try_decrement('ck.lease_tokens', 1, 'last_value', 1); -- expect: 42809
SELECT ck.try_decrement('pg_toast.pg_toast_1255', 1, 'chunk_seq', 1); -- expect: 42809|42501
SELECT ck.try_decrement('pg_class', 1259::oid, 'relpages', 1); -- expect: 42501
SELECT ck.try_decrement('part', 1, 'q4', 1); -- expect: = 9
SELECT ck.try_decrement('part_1', 1, 'q4', 1); -- expect: = 8
SELECT ck.try_transition('part', 2, 'state', 'free', 'held'); -- expect: = t
SELECT ck.try_decrement('my_tmp', 1, 'q4', 1); -- expect: = 9
SELECT ck.try_decrement(:'other_tmp', 1, 'q4', 1); -- expect: 42501|0A000
SELECT ck.decrement(:'other_tmp', 1, 'q4', 1); -- expect: 42501|0A000
SELECT ck.try_transition(:'other_tmp', 1, 'q4', '10', '11'); -- expect: 42501|0A000
SELECT ck.try_decrement('rls_t', 1, 'q', 1); -- expect: = <NULL>
SELECT ck.decrement('rls_t', 1, 'q', 1); -- expect: CK004
SELECT ck.try_decrement('rls_t', 2, 'q', 1); -- expect: = 9
-- a key that is unique in the parent only: the UPDATE reaches the child's row too
SELECT ck.try_decrement('inh_p', 1, 'q', 1); -- expect: 42P10|21000 or = 9
SELECT sum(q) FROM inh_p; -- expect: = 20 or = 19
BEGIN; SELECT ck.try_decrement('ck.queues', 'jobs'::regclass, 'max_attempts', 1); ROLLBACK; -- expect: = 2
-- states
SELECT ck.try_transition('stock', 1, 'state', 'free', 'held'); -- expect: = t
SELECT ck.try_transition('stock', 1, 'state', 'free', 'held'); -- expect: = f
SELECT ck.transition('stock', 1, 'state', 'free', 'booked'); -- expect: CK003
SELECT ck.transition('stock', 999999, 'state', 'free', 'booked'); -- expect: CK004
SELECT ck.try_transition('stock', 999999, 'state', 'free', 'booked'); -- expect: = f
SELECT ck.try_transition('stock', 1, 'state', 'held', 'nope'); -- expect: 22P02
SELECT ck.try_transition('stock', 1, 'state', 'nope', 'held'); -- expect: 22P02
SELECT ck.try_transition('stock', 1, 'label', 'free', repeat('x', 9)); -- expect: 22001
SELECT ck.try_transition('stock', 1, 'q4', '9', 'abc'); -- expect: 22P02
SELECT ck.try_transition('stock', 6, 'q4', '10', '11'); -- expect: = t
SELECT ck.try_transition('stock', 1, 'status', '', repeat('x', 10000)); -- expect: = f
SELECT ck.try_transition('jt', 1, 'j', '{}', '[]'); -- expect: 42883
SELECT ck.try_transition('jt', 1, 'p', '(0,0)', '(1,1)'); -- expect: 42883
SELECT ck.try_transition('gen', 1, 'b', '2', '4'); -- expect: 428C9
SELECT ck.try_transition('stock_v', 1, 'state', 'free', 'held'); -- expect: 42809
SELECT ck.try_transition('orders', '1'::text, 'state', 'free', 'held'); -- expect: = f
SELECT ck.try_transition('orders', now(), 'state', 'free', 'held'); -- expect: 42804
SELECT ck.try_transition('orders', 1, 'state', 'free', 'held', 'note'); -- expect: 42P10
-- versioned updates (q8 as the version: 10 on rows 1-100; q2 of row 1003 is at the smallint maximum now)
SELECT ck.try_update_if_version(NULL, 1, 10, '{}', 'q8'); -- expect: 22004
SELECT ck.try_update_if_version('stock', NULL::integer, 10, '{}', 'q8'); -- expect: 22004
SELECT ck.try_update_if_version('stock', 1, NULL, '{}', 'q8'); -- expect: 22004
SELECT ck.try_update_if_version('stock', 1, 10, NULL, 'q8'); -- expect: 22004
SELECT ck.try_update_if_version('stock', 1, 10, '{}', NULL); -- expect: 22004
SELECT ck.try_update_if_version('stock', 1, 10, '[]', 'q8'); -- expect: 22023
SELECT ck.try_update_if_version('stock', 1, 10, 'null', 'q8'); -- expect: 22023
SELECT ck.try_update_if_version('stock', 1, 10, '{"sku": 2}', 'q8'); -- expect: 22023
SELECT ck.try_update_if_version('stock', 1, 10, '{"q8": 2}', 'q8'); -- expect: 22023
SELECT ck.try_update_if_version('stock', 1, 10, '{"nope": 2}', 'q8'); -- expect: 42703
SELECT ck.try_update_if_version('stock', 1, 10, '{"xmin": 2}', 'q8'); -- expect: 42703
SELECT ck.try_update_if_version('stock', 1, 10, '{"q4; DROP TABLE stock": 2}', 'q8'); -- expect: 42703
SELECT ck.try_update_if_version('stock', 1, 10, '{}'); -- expect: 42703
SELECT ck.try_update_if_version('stock', 1, 10, '{"q4": 1}', 'code'); -- expect: 42804
SELECT ck.try_update_if_version('stock', 1, 10, '{"q4": 1}', 'q8', 'q4'); -- expect: 42P10
SELECT ck.try_update_if_version('gen', 1, 1, '{"b": 2}', 'a'); -- expect: 428C9
SELECT ck.try_update_if_version('stock', 1, 10, '{"label": "xxxxxxxxx"}', 'q8'); -- expect: 22001
SELECT ck.try_update_if_version('stock', 1, 10, '{"state": "nope"}', 'q8'); -- expect: 22P02
SELECT ck.try_update_if_version('stock', 1, 10, '{"q2": 99999}', 'q8'); -- expect: 22003
SELECT ck.try_update_if_version('stock', 1003, 32767, '{}', 'q2'); -- expect: 22003
SELECT ck.try_update_if_version('stock_v', 1, 10, '{}', 'q8'); -- expect: 42809
SELECT ck.try_update_if_version(:'other_tmp', 1, 10, '{}', 'q4'); -- expect: 42501|0A000
SELECT ck.try_update_if_version('"Weird Table"', 1, 9, '{"sta\"te": "c"}', 'Q ty'); -- expect: = 10
SELECT ck.try_update_if_version('stock', 2, 10, '{"status": "held", "qd": 3}', 'q8'); -- expect: = 11
SELECT ck.try_update_if_version('stock', 2, 10, '{"status": "lost"}', 'q8'); -- expect: = <NULL>
SELECT ck.update_if_version('stock', 2, 10, '{}', 'q8'); -- expect: CK006
SELECT ck.update_if_version('stock', 999999, 10, '{}', 'q8'); -- expect: CK004
SELECT ck.update_if_version(NULL, 2, 11, '{}', 'q8'); -- expect: 22004
SELECT ck.version_guard_ddl(NULL); -- expect: 22004
SELECT ck.version_guard_ddl('stock', 'code'); -- expect: 42804
SELECT ck.version_guard_ddl('stock', 'nope'); -- expect: 42703
SELECT ck.version_guard_ddl('stock_v', 'q8'); -- expect: 42809
SELECT ck.add_version_guard('stock', NULL); -- expect: 22004
SELECT ck.add_version_guard('stock', 'state'); -- expect: 42804
SELECT ck_internal.version_guard(); -- expect: 09000|0A000
-- row locks
SELECT ck.lock_rows(NULL, ARRAY[1]); -- expect: 22004
SELECT ck.lock_rows('stock', NULL::integer[]); -- expect: 22004
SELECT ck.lock_rows('stock', ARRAY[1, NULL]); -- expect: 22004
SELECT ck.lock_rows('stock', ARRAY[1], NULL); -- expect: 22004
SELECT ck.lock_rows('stock', ARRAY[1], 'exclusive'); -- expect: 22023
SELECT ck.lock_rows('stock', ARRAY[1], repeat('x', 10000)); -- expect: 22023
SELECT ck.lock_rows('stock', ARRAY[1], 'no key update', '-1 second'); -- expect: 22023
SELECT ck.lock_rows('stock', ARRAY['x']); -- expect: 22P02
SELECT ck.lock_rows('stock', '{x}'); -- expect: 22P02
SELECT ck.lock_rows('stock', 1); -- expect: 42804
SELECT ck.lock_rows('stock', ARRAY[now()]); -- expect: 42804
SELECT ck.lock_rows('stock', ARRAY[1], key_column => 'q8'); -- expect: 42P10
SELECT ck.lock_rows('stock_v', ARRAY[1]); -- expect: 42809
SELECT ck.lock_rows(:'other_tmp', ARRAY[1]); -- expect: 42501|0A000
SELECT ck.lock_rows('stock', '{{1,2},{3,4}}'::integer[]); -- expect: = 4
SELECT ck.lock_rows('stock', ARRAY[3, 1, 2, 999999]); -- expect: = 3
SELECT ck.lock_rows('stock', ARRAY['sku-1', 'sku-2'], 'update', '0', 'code'); -- expect: = 2
SELECT ck.lock_rows('"Weird Table"', ARRAY[1], 'key share', '1 second'); -- expect: = 1

------------------------------------------------------------------------------------------
-- Error classification
------------------------------------------------------------------------------------------
SELECT ck.sqlstate_action(NULL); -- expect: = <NULL>
SELECT ck.sqlstate_action(''); -- expect: 22023
SELECT ck.sqlstate_action('abcde'); -- expect: 22023
SELECT ck.sqlstate_action('4000'); -- expect: 22023
SELECT ck.sqlstate_action('400011'); -- expect: 22023
SELECT ck.sqlstate_action('é1234'); -- expect: 22023
SELECT ck.sqlstate_action(repeat('4', 100000)); -- expect: 22023
SELECT ck.sqlstate_action('40001'); -- expect: = retry
SELECT ck.sqlstate_action('55P03'); -- expect: = busy
SELECT ck.sqlstate_action('CK005'); -- expect: = conflict
SELECT ck.sqlstate_action('XX000'); -- expect: = error

------------------------------------------------------------------------------------------
-- Trigger functions called directly
------------------------------------------------------------------------------------------
SELECT ck_internal.queues_changed(); -- expect: 39P01|0A000
SELECT ck_internal.notify_queue(); -- expect: 39P01|0A000
SELECT ck_internal.queue_ready(); -- expect: 39P01|0A000
SELECT ck_internal.queue_left(); -- expect: 39P01|0A000
-- 'poll' only on a server whose shared memory has no room for the shared state (0.4.0): never
-- on the test cluster, preloaded or not.
SELECT ck.claim_wait_mode(); -- expect: = commit

------------------------------------------------------------------------------------------
-- Queues
------------------------------------------------------------------------------------------
SELECT ck.create_queue(NULL); -- expect: 22004
SELECT ck.create_queue(''); -- expect: 42602|42601|22023
SELECT ck.create_queue('jobs'); -- expect: 42P07
SELECT ck.create_queue('stock'); -- expect: 42P07
SELECT ck.create_queue('nosuchschema.q'); -- expect: 3F000
SELECT ck.create_queue('ck.q'); -- expect: 42501
SELECT ck.create_queue('pg_catalog.q'); -- expect: 42501
SELECT ck.create_queue('a.b.c'); -- expect: 0A000|3F000|42601|42602
SELECT ck.create_queue('q; DROP TABLE stock'); -- expect: 42601|42602
SELECT ck.create_queue('public.'); -- expect: 42601|42602
SELECT ck.create_queue('q', NULL); -- expect: 22004
SELECT ck.create_queue('q', '0'); -- expect: 22023
SELECT ck.create_queue('q', '-1 second'); -- expect: 22023
SELECT ck.create_queue('q', '1 mon -30 days'); -- expect: 22023
SELECT ck.create_queue('q', '1 second', NULL); -- expect: 22004
SELECT ck.create_queue('q', '1 second', 0); -- expect: 22023
SELECT ck.create_queue('q', '1 second', 1001); -- expect: 22023
SELECT ck.create_queue('q', '1 second', -2147483648); -- expect: 22023
SELECT ck.create_queue('q', '1 second', 5, NULL); -- expect: 22004
BEGIN; SELECT ck.create_queue('q', '178000000 years', 1000, true); ROLLBACK; -- expect: = q
BEGIN; SELECT ck.create_queue('"Quoted Name"'); ROLLBACK; -- expect: = "Quoted Name"
BEGIN; SELECT ck.create_queue(repeat('é', 40)); ROLLBACK; -- expect: ok or 42622
-- a 63-byte name: its dead-letter table "<name>_dead" must not be truncated onto the queue's own name
BEGIN; SELECT ck.create_queue(repeat('q', 63)); ROLLBACK; -- expect: ok or 42622
BEGIN; SELECT ck.create_queue(repeat('q', 70)); ROLLBACK; -- expect: ok or 42622
BEGIN; SELECT ck.create_queue('pg_temp.tq'); SELECT ck.enqueue('pg_temp.tq') > 0; SELECT count(*) FROM ck.claim('pg_temp.tq'); ROLLBACK; -- expect: = tq;t;1
SELECT ck.drop_queue(NULL); -- expect: 22004
SELECT ck.drop_queue(0); -- expect: 42P01|42809
SELECT ck.drop_queue('stock'); -- expect: 42809
SELECT ck.drop_queue('jobs_dead'); -- expect: 42809
SELECT ck.drop_queue('ck.queues'); -- expect: 42809|42501
BEGIN; SELECT ck.drop_queue('mail'); ROLLBACK; -- expect: ok
BEGIN; SELECT ck.drop_queue(:'other_q'); ROLLBACK; -- expect: ok or 42501|0A000
SELECT ck.enqueue(NULL); -- expect: 22004
SELECT ck.enqueue('jobs', NULL); -- expect: 22004
SELECT ck.enqueue('jobs', '{}', NULL); -- expect: 22004
SELECT ck.enqueue('jobs', '{}', now(), NULL); -- expect: 22004
SELECT ck.enqueue(0); -- expect: 42P01
SELECT ck.enqueue('stock'); -- expect: 42809
SELECT ck.enqueue('jobs_dead'); -- expect: 42809
SELECT ck.enqueue('stock_v'); -- expect: 42809
SELECT ck.enqueue('ft'); -- expect: 42809
SELECT ck.enqueue(:'other_q'); -- expect: 42501|0A000
BEGIN; SELECT ck.enqueue('jobs', '{}', 'infinity') > 0; ROLLBACK; -- expect: = t
BEGIN; SELECT ck.enqueue('jobs', '{}', '-infinity', -2147483648) > 0; ROLLBACK; -- expect: = t
BEGIN; SELECT ck.enqueue('mail', (SELECT jsonb_agg(g) FROM generate_series(1, 100000) AS g)) > 0; ROLLBACK; -- expect: = t
BEGIN; SELECT ck.enqueue('jobs', unique_key => 'h') = ck.enqueue('jobs', unique_key => 'h'); ROLLBACK; -- expect: = t
BEGIN; SELECT ck.enqueue('jobs', unique_key => '') > 0; ROLLBACK; -- expect: = t
BEGIN; SELECT ck.enqueue('jobs', unique_key => 'x'';--') > 0; ROLLBACK; -- expect: = t
BEGIN; SELECT ck.enqueue('jobs', unique_key => (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 3000) AS g)) > 0; ROLLBACK; -- expect: ok or 54000
SELECT ck.enqueue('jobs', after => ARRAY[1, NULL]); -- expect: 22004
SELECT ck.enqueue('jobs', after => ARRAY[0]); -- expect: 22023
SELECT ck.enqueue('jobs', after => ARRAY[-9223372036854775808]); -- expect: 22023
SELECT ck.enqueue('jobs', after => (SELECT array_agg(g) FROM generate_series(1, 100001) AS g)); -- expect: 54000
BEGIN; SELECT ck.enqueue('jobs', after => '{}') > 0; ROLLBACK; -- expect: = t
BEGIN; SELECT ck.enqueue('jobs', after => ARRAY[9223372036854775807]) > 0; ROLLBACK; -- expect: = t
BEGIN; SELECT ck.enqueue('jobs', after => '{{1,2},{3,4}}'::bigint[]) > 0; ROLLBACK; -- expect: = t
SELECT ck.enqueue_unique(NULL, 'k', '{}'); -- expect: 22004
SELECT ck.enqueue_unique('jobs', NULL, '{}'); -- expect: 22004
SELECT ck.enqueue_unique('jobs', 'k', NULL); -- expect: 22004
SELECT ck.enqueue_unique('jobs', 'k', '{}', NULL); -- expect: 22004
SELECT ck.enqueue_unique('jobs', 'k', '{}', now(), NULL); -- expect: 22004
SELECT ck.enqueue_unique('stock', 'k', '{}'); -- expect: 42809
SELECT ck.set_concurrency_limit(NULL, 'k', 1); -- expect: 22004
SELECT ck.set_concurrency_limit(0, 'k', 1); -- expect: 42P01
SELECT ck.set_concurrency_limit('stock', 'k', 1); -- expect: 42809
SELECT ck.set_concurrency_limit('jobs', 'k', -1); -- expect: 22023
SELECT ck.set_concurrency_limit('jobs', 'k', -2147483648); -- expect: 22023
BEGIN; SELECT ck.enqueue('jobs', concurrency_key => 'k') > 0 FROM (SELECT ck.set_concurrency_limit('jobs', 'k', 2147483647)) AS l; ROLLBACK; -- expect: = t
BEGIN; SELECT ck.enqueue('jobs', concurrency_key => 'x'';--') > 0 FROM (SELECT ck.set_concurrency_limit('jobs', 'x'';--', 0)) AS l; ROLLBACK; -- expect: = t
BEGIN; SELECT ck.set_concurrency_limit('jobs', NULL, NULL) FROM (SELECT ck.set_concurrency_limit('jobs', NULL, 0)) AS l; ROLLBACK; -- expect: ok
BEGIN; SELECT ck.enqueue('jobs', concurrency_key => (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 3000) AS g)) > 0; ROLLBACK; -- expect: = t
SELECT ck.enqueue('jobs', unique_for => '1 hour'); -- expect: 22023
SELECT ck.enqueue('jobs', unique_key => 'w', unique_for => '0'); -- expect: 22023
SELECT ck.enqueue('jobs', unique_key => 'w', unique_for => '-1 day'); -- expect: 22023
BEGIN; SELECT ck.enqueue('jobs', unique_key => 'w', unique_for => '1 ms') > 0; ROLLBACK; -- expect: = t
BEGIN; SELECT ck.enqueue('jobs', unique_key => 'w', unique_for => '1000000 years') > 0; ROLLBACK; -- expect: ok or 22008
BEGIN; SELECT (ck.enqueue_unique('jobs', 'w', '{}', unique_for => '1 hour')).id = (ck.enqueue_unique('jobs', 'w', '{}', unique_for => '1 hour')).id; ROLLBACK; -- expect: = t
SELECT ck.enqueue_unique(:'other_q', 'k', '{}'); -- expect: 42501|0A000
SELECT ck.cancel(NULL, 1); -- expect: 22004
SELECT ck.cancel('jobs', NULL); -- expect: 22004
SELECT ck.cancel(0, 1); -- expect: 42P01
SELECT ck.cancel('stock', 1); -- expect: 42809
SELECT ck.cancel('jobs_dead', 1); -- expect: 42809
SELECT ck.cancel(:'other_q', 1); -- expect: 42501|0A000
SELECT ck.cancel('jobs', -9223372036854775808); -- expect: = gone
SELECT ck.claim(NULL); -- expect: 22004
SELECT ck.claim('jobs', NULL); -- expect: 22004
SELECT ck.claim('jobs', 0); -- expect: 22023
SELECT ck.claim('jobs', -1); -- expect: 22023
SELECT ck.claim('jobs', 10001); -- expect: 22023
SELECT ck.claim('jobs', 2147483647); -- expect: 22023
SELECT ck.claim('jobs', 1, '0'); -- expect: 22023
SELECT ck.claim('jobs', 1, '-1 second'); -- expect: 22023
SELECT ck.claim('jobs', 1, '1 mon -30 days'); -- expect: 22023
SELECT ck.claim('jobs', 1, '178000000 years'); -- expect: 22008
SELECT ck.claim('jobs', 1, '2147483647 days'); -- expect: 22008
SELECT ck.claim('stock'); -- expect: 42809
SELECT ck.claim(:'other_q'); -- expect: 42501|0A000
BEGIN; SELECT count(*) > 100 FROM ck.claim('jobs', 10000); ROLLBACK; -- expect: = t
SELECT ck.claim_wait(NULL, 1, NULL, '1 second'); -- expect: 22004
SELECT ck.claim_wait('jobs', NULL, NULL, '1 second'); -- expect: 22004
SELECT ck.claim_wait('jobs', 1, NULL, NULL); -- expect: 22004
SELECT ck.claim_wait('jobs', 1, NULL, '-1 second'); -- expect: 22023
SELECT ck.claim_wait('jobs', 1, '0', '1 second'); -- expect: 22023
SELECT ck.claim_wait('jobs', 0, NULL, '1 second'); -- expect: 22023
BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT ck.claim_wait('jobs', 1, NULL, '1 second'); ROLLBACK; -- expect: 25001
BEGIN; SELECT ck.create_queue('empty_q'); SELECT count(*) FROM ck.claim_wait('empty_q', 1, NULL, '0'); ROLLBACK; -- expect: = empty_q;0
BEGIN; SELECT ck.create_queue('empty_q'); SELECT count(*) FROM ck.claim_wait('empty_q', 1, NULL, '50 ms'); ROLLBACK; -- expect: = empty_q;0
-- an empty queue and a long max_wait: the call waits until it is cancelled
BEGIN; SELECT FROM ck.create_queue('empty_q'); SET LOCAL statement_timeout = '300ms'; SELECT count(*) FROM ck.claim_wait('empty_q', 1, NULL, '1000 years'); ROLLBACK; -- expect: 57014
BEGIN; SELECT FROM ck.create_queue('empty_q'); SET LOCAL statement_timeout = '300ms'; SELECT count(*) FROM ck.claim_wait('empty_q', 1, NULL, '300000 years'); ROLLBACK; -- expect: 57014
BEGIN; SELECT FROM ck.create_queue('empty_q'); SET LOCAL statement_timeout = '300ms'; SELECT count(*) FROM ck.claim_wait('empty_q', 1, NULL, '178000000 years'); ROLLBACK; -- expect: 57014
SELECT ck.complete(NULL, 1, 1); -- expect: 22004
SELECT ck.complete('jobs', NULL, 1); -- expect: 22004
SELECT ck.complete('jobs', 1, NULL); -- expect: 22004
SELECT ck.complete('jobs', -1, -1); -- expect: CK005
SELECT ck.try_complete('jobs', -1, -1); -- expect: = f
SELECT ck.try_complete('jobs', 9223372036854775807, -9223372036854775808); -- expect: = f
SELECT ck.complete('stock', 1, 1); -- expect: 42809
SELECT ck.complete(:'other_q', 1, 1); -- expect: 42501|0A000
SELECT id AS jid, lease_token AS jtok FROM ck.claim('jobs') \gset
SELECT ck.complete('jobs', :jid, :jtok); -- expect: = t
SELECT ck.complete('jobs', :jid, :jtok); -- expect: CK005
SELECT ck.try_complete('jobs', :jid, :jtok); -- expect: = f
SELECT ck.complete_many(NULL, '{}', '{}'); -- expect: 22004
SELECT ck.complete_many('jobs', NULL, '{}'); -- expect: 22004
SELECT ck.complete_many('jobs', '{}', NULL); -- expect: 22004
SELECT ck.complete_many('jobs', '{NULL}', '{1}'); -- expect: 22004
SELECT ck.complete_many('jobs', '{1}', '{NULL}'); -- expect: 22004
SELECT ck.complete_many('jobs', '{1,2}', '{1}'); -- expect: 2202E
SELECT ck.complete_many('jobs', '{{1,2},{3,4}}', '{{1,2},{3,4}}'); -- expect: 2202E
SELECT ck.complete_many('jobs', array_fill(1::bigint, ARRAY[1, 1, 1]), '{1}'); -- expect: 2202E
SELECT ck.complete_many('jobs', array_fill(1::bigint, ARRAY[10001]), array_fill(1::bigint, ARRAY[10001])); -- expect: 22023
SELECT count(*) FROM ck.try_complete_many('jobs', array_fill(-1::bigint, ARRAY[10000]), array_fill(1::bigint, ARRAY[10000])); -- expect: = 0
SELECT count(*) FROM ck.complete_many('jobs', array_fill(-1::bigint, ARRAY[10000]), array_fill(1::bigint, ARRAY[10000])); -- expect: CK005
SELECT count(*) FROM ck.complete_many('jobs', '{}', '{}'); -- expect: = 0
-- 17 reads '{{}}' as an empty array.
SELECT count(*) FROM ck.complete_many('jobs', '{{}}', '{}'); -- expect: 22P02; from 17: = 0
SELECT count(*) FROM ck.try_complete_many('jobs', '[5:7]={1,2,3}', '{1,2,3}'); -- expect: = 0
SELECT count(*) FROM ck.complete_many('jobs', '[5:7]={1,2,3}', '{1,2,3}'); -- expect: CK005
SELECT ck.complete_many('stock', '{}', '{}'); -- expect: 42809
SELECT id AS jid, lease_token AS jtok FROM ck.claim('jobs') \gset
SELECT count(*) FROM ck.try_complete_many('jobs', ARRAY[:jid, :jid]::bigint[], ARRAY[:jtok, :jtok]::bigint[]); -- expect: = 1
SELECT ck.complete_and_claim(NULL, 1, 1); -- expect: 22004
SELECT ck.complete_and_claim('jobs', NULL, 1); -- expect: 22004
SELECT ck.complete_and_claim('jobs', 1, NULL); -- expect: 22004
SELECT ck.complete_and_claim('jobs', 1, 1, NULL); -- expect: 22004
SELECT ck.complete_and_claim('jobs', -1, -1); -- expect: CK005
SELECT ck.complete_and_claim('jobs', -1, -1, 0); -- expect: 22023|CK005
SELECT ck.complete_and_claim('jobs', -1, -1, 1, '-1 second'); -- expect: 22023|CK005
SELECT ck.complete_and_claim('stock', 1, 1); -- expect: 42809
SELECT id AS jid, lease_token AS jtok FROM ck.claim('jobs') \gset
SELECT count(*) FROM ck.complete_and_claim('jobs', :jid, :jtok, 1, '178000000 years'); -- expect: 22008
SELECT count(*) FROM ck.complete_and_claim('jobs', :jid, :jtok, 2); -- expect: = 2
SELECT ck.fail(NULL, 1, 1); -- expect: 22004
SELECT ck.fail('jobs', NULL, 1); -- expect: 22004
SELECT ck.fail('jobs', 1, NULL); -- expect: 22004
SELECT ck.fail('jobs', -1, -1); -- expect: CK005
SELECT ck.try_fail('jobs', -1, -1); -- expect: = <NULL>
SELECT ck.fail('jobs', -1, -1, NULL, '-1 second'); -- expect: 22023
SELECT ck.fail('stock', 1, 1); -- expect: 42809
SELECT id AS jid, lease_token AS jtok FROM ck.claim('jobs') \gset
SELECT ck.fail('jobs', :jid, :jtok, 'boom', '178000000 years'); -- expect: 22008
SELECT ck.fail('jobs', :jid, :jtok, repeat('e', 100000), '2147483647 days'); -- expect: 22008
SELECT ck.fail('jobs', :jid, :jtok, NULL, '1 mon -30 days'); -- expect: = retry
SELECT id AS mid, lease_token AS mtok FROM ck.claim('mail') \gset
SELECT ck.fail('mail', :mid, :mtok, NULL); -- expect: = dead
SELECT ck.try_fail('mail', :mid, :mtok, NULL); -- expect: = <NULL>
SELECT ck.extend_lease(NULL, 1, 1, '1 hour'); -- expect: 22004
SELECT ck.extend_lease('jobs', NULL, 1, '1 hour'); -- expect: 22004
SELECT ck.extend_lease('jobs', 1, NULL, '1 hour'); -- expect: 22004
SELECT ck.extend_lease('jobs', 1, 1, NULL); -- expect: 22004
SELECT ck.extend_lease('jobs', 1, 1, '0'); -- expect: 22023
SELECT ck.extend_lease('jobs', 1, 1, '-1 second'); -- expect: 22023
SELECT ck.extend_lease('jobs', -1, -1, '1 hour'); -- expect: CK005
SELECT ck.try_extend_lease('jobs', -1, -1, '1 hour'); -- expect: = <NULL>
SELECT ck.extend_lease('stock', 1, 1, '1 hour'); -- expect: 42809
SELECT id AS jid, lease_token AS jtok FROM ck.claim('jobs') \gset
SELECT ck.extend_lease('jobs', :jid, :jtok, '178000000 years'); -- expect: 22008
SELECT ck.extend_lease('jobs', :jid, :jtok, '2147483647 days'); -- expect: 22008
SELECT ck.extend_lease('jobs', :jid, :jtok, '1 hour') > now(); -- expect: = t
SELECT ck.retry_dead(NULL, 1); -- expect: 22004
SELECT ck.retry_dead('mail', NULL); -- expect: 22004
SELECT ck.retry_dead('mail', -1); -- expect: = f
SELECT ck.retry_dead('stock', 1); -- expect: 42809
SELECT ck.retry_dead('mail_dead', 1); -- expect: 42809
-- the queue gained a NOT NULL column without default since the job died: the revived row violates it
BEGIN; ALTER TABLE mail ADD COLUMN must integer NOT NULL DEFAULT 1; ALTER TABLE mail ALTER COLUMN must DROP DEFAULT; SELECT ck.retry_dead('mail', :mid); ROLLBACK; -- expect: 23502
-- a job with the dead job's id is back in the queue
BEGIN; INSERT INTO mail (id, payload) OVERRIDING SYSTEM VALUE VALUES (:mid, '{}'); SELECT ck.retry_dead('mail', :mid); ROLLBACK; -- expect: 23505
BEGIN; ALTER TABLE mail DROP COLUMN last_error; SELECT ck.retry_dead('mail', :mid); ROLLBACK; -- expect: ok or 42703
SELECT ck.retry_dead('mail', :mid); -- expect: = t
SELECT ck.retry_dead('mail', :mid); -- expect: = f
SELECT ck.purge_dead(NULL, '1 day'); -- expect: 22004
SELECT ck.purge_dead('mail', NULL); -- expect: 22004
SELECT ck.purge_dead('mail', '-1 second'); -- expect: 22023
SELECT ck.purge_dead('mail', '178000000 years'); -- expect: = 0 or 22008
SELECT ck.purge_dead('mail', '-178000000 years'); -- expect: 22023
SELECT ck.purge_dead('stock', '1 day'); -- expect: 42809
BEGIN; SELECT ck.purge_dead('mail', '0') > 0; ROLLBACK; -- expect: = t
SELECT ck.purge_dead_matching(NULL); -- expect: 22004
SELECT ck.purge_dead_matching('mail', batch => NULL); -- expect: 22004
SELECT ck.retry_dead_matching('mail', batch => 0); -- expect: 22023
SELECT ck.purge_dead_matching('mail', batch => 2147483647); -- expect: 22023
SELECT ck.purge_dead_matching('mail', older_than => '-178000000 years'); -- expect: 22023
SELECT ck.retry_dead_matching('mail', min_attempts => -2147483648); -- expect: 22023
SELECT ck.purge_dead_matching('stock'); -- expect: 42809
SELECT ck.purge_dead_matching('mail', error_like => 'x'';--', payload_contains => '{"a": "1) OR (true"}'); -- expect: = 0
UPDATE ck.queues SET timeout = '-1 second' WHERE queue = 'mail'::regclass; -- expect: 23514
UPDATE ck.queues SET timeout = '178000000 years' WHERE queue = 'mail'::regclass; -- expect: ok
UPDATE ck.queues SET timeout = NULL WHERE queue = 'mail'::regclass; -- expect: ok
SELECT ck.queue_stats(NULL); -- expect: 22004
SELECT ck.queue_stats(0); -- expect: 42P01
SELECT ck.queue_stats('stock'); -- expect: 42809
SELECT ck.queue_stats(:'other_q'); -- expect: 42501|0A000
SELECT dead FROM ck.queue_stats('mail'); -- expect: = 5
SELECT ck_internal.claim_frontier(NULL); -- expect: 22004
SELECT ck_internal.claim_frontier(0); -- expect: 42P01
SELECT ck_internal.claim_frontier('stock'); -- expect: 42809
SELECT ck_internal.claim_frontier(:'other_q'); -- expect: 42501|0A000
SELECT ck.claim_path(NULL); -- expect: 22004
SELECT ck.claim_path(0); -- expect: 42P01
SELECT ck.claim_path('stock'); -- expect: 42809
SELECT ck.claim_path('jobs_dead'); -- expect: 42809
SELECT ck.claim_path(:'other_q'); -- expect: 42501|0A000
-- which way claims go: the frontier once a claim of the queue ran in this transaction; the whole
-- index under REPEATABLE READ or with the periodic full claim switched off
BEGIN; SELECT count(*) >= 0 FROM ck.claim('jobs'); SELECT path FROM ck.claim_path('jobs'); ROLLBACK; -- expect: = t;frontier
BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT path FROM ck.claim_path('jobs'); ROLLBACK; -- expect: = full
BEGIN; SET LOCAL concurrency_kit.full_claim_interval = 0; SELECT path FROM ck.claim_path('jobs'); ROLLBACK; -- expect: = full
-- the counters saw the sample database's enqueues and claims (62 mail jobs in, 10 claimed)
SELECT enqueued >= 62 AND claimed >= 10 FROM ck.queue_activity() WHERE queue = 'mail'::regclass; -- expect: = t
-- the queue's dead-letter table is gone
BEGIN; DROP TABLE mail_dead; SELECT ck.fail('mail', -1, -1); ROLLBACK; -- expect: 42P01
BEGIN; DROP TABLE mail_dead; SELECT ck.queue_stats('mail'); ROLLBACK; -- expect: 42P01
-- a column of the queue is gone or of another type
BEGIN; ALTER TABLE jobs DROP COLUMN priority; SELECT ck.claim('jobs'); ROLLBACK; -- expect: 42703
BEGIN; ALTER TABLE jobs ALTER COLUMN lease_token TYPE text; SELECT ck.complete('jobs', 1, 1); ROLLBACK; -- expect: 42883|42804
BEGIN; ALTER TABLE jobs ALTER COLUMN payload TYPE text; INSERT INTO jobs DEFAULT VALUES; SELECT ck.claim('jobs', 5); ROLLBACK; -- expect: 42804
BEGIN; ALTER TABLE jobs ALTER COLUMN priority TYPE bigint; INSERT INTO jobs DEFAULT VALUES; SELECT ck.claim('jobs', 5); ROLLBACK; -- expect: 42804
BEGIN; ALTER TABLE jobs ALTER COLUMN run_at TYPE timestamp; INSERT INTO jobs DEFAULT VALUES; SELECT ck.claim('jobs', 5); ROLLBACK; -- expect: 42804
BEGIN; UPDATE ck.queues SET max_attempts = 1000, lease = '1 microsecond'; SELECT count(*) > 0 FROM ck.claim('jobs', 5); ROLLBACK; -- expect: = t

------------------------------------------------------------------------------------------
-- Advisory locks (the other session holds (1, 77) and (77, 77))
------------------------------------------------------------------------------------------
SELECT ck.lock_namespace(NULL); -- expect: 22004
SELECT ck.lock_namespace(''); -- expect: 22023
SELECT ck.lock_namespace(repeat('x', 64)); -- expect: 22023
SELECT ck.lock_namespace(repeat('é', 32)); -- expect: 22023
SELECT ck.lock_namespace(repeat('x', 100000)); -- expect: 22023
SELECT ck.lock_namespace(repeat('é', 31) || 'x') > 2; -- expect: = t
SELECT ck.lock_namespace('outbox'); -- expect: = 1
SELECT ck.xact_lock(NULL::integer); -- expect: 22004
SELECT ck.xact_lock(1, NULL); -- expect: 22004
SELECT ck.xact_lock(NULL::text); -- expect: 22004
SELECT ck.xact_lock('outbox', NULL); -- expect: 22004
SELECT ck.xact_lock(''); -- expect: 22023
SELECT ck.xact_lock(repeat('x', 64)); -- expect: 22023
SELECT ck.xact_lock(1, 1, '0'); -- expect: 22023
SELECT ck.xact_lock(1, 1, '-1 second'); -- expect: 22023
SELECT ck.xact_lock(1, 1, '1 mon -30 days'); -- expect: 22023
SELECT ck.xact_lock(1, 1, '-178000000 years'); -- expect: 22023
SELECT ck.xact_lock(1, 1, '178000000 years'); -- expect: ok
SELECT ck.xact_lock(2147483647, -2147483648, '1 microsecond'); -- expect: ok
SELECT ck.xact_lock(77, 77, '50 ms'); -- expect: 55P03
SELECT ck.xact_lock('outbox', 77, '50 ms'); -- expect: 55P03
BEGIN; SET LOCAL lock_timeout = '7s'; SELECT ck.xact_lock(77, 77, '50 ms'); ROLLBACK; -- expect: 55P03
BEGIN; SET LOCAL lock_timeout = '7s'; DO $$BEGIN PERFORM ck.xact_lock(77, 77, '50 ms'); EXCEPTION WHEN lock_not_available THEN NULL; END$$; SHOW lock_timeout; ROLLBACK; -- expect: = 7s
BEGIN; SET LOCAL lock_timeout = '50ms'; SELECT ck.xact_lock(77, 77); ROLLBACK; -- expect: 55P03
SELECT ck.try_xact_lock(NULL::integer); -- expect: 22004
SELECT ck.try_xact_lock('outbox', NULL); -- expect: 22004
SELECT ck.try_xact_lock(77, 77); -- expect: = f
SELECT ck.try_xact_lock('outbox', 77); -- expect: = f
SELECT ck.try_xact_lock(-2147483648, -2147483648); -- expect: = t
SELECT ck.session_lock(NULL::integer); -- expect: 22004
SELECT ck.session_lock(1, NULL); -- expect: 22004
SELECT ck.session_lock(1, 1, '-1 second'); -- expect: 22023
SELECT ck.session_lock(77, 77, '50 ms'); -- expect: 55P03
SELECT ck.session_lock('outbox', 77, '50 ms'); -- expect: 55P03
SELECT ck.session_unlock(NULL::integer); -- expect: 22004
SELECT ck.session_unlock(5, 5); -- expect: 55000
SELECT ck.session_unlock('never-registered'); -- expect: 42704
SELECT ck.xact_lock('outbx', 1); -- expect: 42704
SELECT ck.try_xact_lock('never-registered', 1); -- expect: 42704
SELECT ck.session_lock('never-registered', 1, '1 s'); -- expect: 42704
SELECT ck.xact_lock(1, 2147483648); -- expect: 22003
SELECT ck.try_xact_lock('outbox', -2147483649); -- expect: 22003
SELECT ck.session_lock(1, -9223372036854775808); -- expect: 22003
SELECT ck.session_unlock(1, 9223372036854775807); -- expect: 22003
SELECT ck.session_unlock(''); -- expect: 22023
SELECT ck.session_lock(5, 5); -- expect: ok
SELECT ck.session_lock(5, 5); -- expect: ok
SELECT count(*) FROM ck.held_locks() WHERE scope = 'session'; -- expect: = 1
SELECT holds FROM ck_internal.session_locks_held(); -- expect: = 2
SELECT ck.session_unlock(5, 5); -- expect: ok
SELECT ck.session_unlock(5, 5); -- expect: ok
SELECT ck.session_unlock(5, 5); -- expect: 55000
SELECT ck.session_lock('outbox', 1); -- expect: ok
SELECT pg_advisory_unlock(1, 1); -- expect: = t
SELECT ck.session_unlock('outbox', 1); -- expect: 55000 or ok
SELECT ck.session_unlock_all(); -- expect: ok
SELECT count(*) FROM ck_internal.session_locks_held(); -- expect: = 0
SELECT count(*) FROM ck.held_locks(); -- expect: = 0
SELECT count(*) FROM ck.lock_waits() WHERE lock = 'advisory 77:77'; -- expect: = 0
SELECT ck.set_lock_timeout(NULL); -- expect: 22004
SELECT ck.set_lock_timeout('1 second'); -- expect: 25P01
BEGIN; SELECT ck.set_lock_timeout(NULL); ROLLBACK; -- expect: 22004
BEGIN; SELECT ck.set_lock_timeout('-1 second'); ROLLBACK; -- expect: 22023
BEGIN; SELECT ck.set_lock_timeout('1 second'); SHOW lock_timeout; ROLLBACK; -- expect: = 1s
BEGIN; SELECT ck.set_lock_timeout('0'); SHOW lock_timeout; ROLLBACK; -- expect: = 0
BEGIN; SELECT ck.set_lock_timeout('178000000 years'); SHOW lock_timeout; ROLLBACK; -- expect: = 2147483647ms
-- a positive interval with a negative part: 23 hours
BEGIN; SELECT ck.set_lock_timeout('1 day -1 hour'), current_setting('lock_timeout'); ROLLBACK; -- expect: = |23h

------------------------------------------------------------------------------------------
-- Whole-transaction retry
------------------------------------------------------------------------------------------
CALL ck.retry(NULL); -- expect: 22004
CALL ck.retry('SELECT 1', NULL); -- expect: 22004
CALL ck.retry('SELECT 1', 'serializable', NULL); -- expect: 22004
CALL ck.retry('SELECT 1', 'serializable', 1, NULL); -- expect: 22004
CALL ck.retry(''); -- expect: 22023
CALL ck.retry(' ; '); -- expect: 22023
CALL ck.retry('SELECT 1', 'snapshot'); -- expect: 22023
CALL ck.retry('SELECT 1', 'read uncommitted'); -- expect: 22023
CALL ck.retry('SELECT 1', 'serializable', 0); -- expect: 22023
CALL ck.retry('SELECT 1', 'serializable', -2147483648); -- expect: 22023
CALL ck.retry('SELECT 1'); -- expect: = 1
CALL ck.retry('SELECT 1', 'READ COMMITTED', 2147483647, true); -- expect: = 1
CALL ck.retry('SELECT ck.current_attempt()'); -- expect: = 1
CALL ck.retry('COMMIT'); -- expect: 2D000
CALL ck.retry('SELECT 1; ROLLBACK'); -- expect: 2D000
CALL ck.retry('SAVEPOINT a'); -- expect: 2D000
CALL ck.retry('PREPARE TRANSACTION ''x'''); -- expect: 2D000|55000
CALL ck.retry('SELECT 1/0'); -- expect: 22012
CALL ck.retry('COPY stock TO STDOUT'); -- expect: 0A000
CALL ck.retry('COPY stock FROM STDIN'); -- expect: 0A000
CALL ck.retry('VACUUM stock'); -- expect: 25001
CALL ck.retry('CALL ck.retry(''SELECT 1'')'); -- expect: 25001
CALL ck.retry('SELECT * FROM nope'); -- expect: 42P01
CALL ck.retry('SELECT $1'); -- expect: 42P02
CALL ck.retry('/* unterminated'); -- expect: 42601
CALL ck.retry('UPDATE stock SET q4 = q4 - 1 WHERE sku = 50; SELECT 1/0'); -- expect: 22012
CALL ck.retry('DO $x$BEGIN RAISE EXCEPTION USING ERRCODE = ''40001''; END$x$', 'serializable', 3); -- expect: 40001
CALL ck.retry('DO $x$BEGIN RAISE EXCEPTION USING ERRCODE = ''55P03''; END$x$', 'serializable', 3); -- expect: 55P03
CALL ck.retry('DO $x$BEGIN RAISE EXCEPTION USING ERRCODE = ''55P03''; END$x$', 'serializable', 2, true); -- expect: 55P03
SET statement_timeout = '300ms';
CALL ck.retry('SELECT pg_sleep(5)'); -- expect: 57014
SET statement_timeout = '10s';
BEGIN; CALL ck.retry('SELECT 1'); ROLLBACK; -- expect: 25001
SELECT ck.current_attempt(); -- expect: = 0
SELECT calls >= 1 FROM ck.retry_stats(); -- expect: = t

------------------------------------------------------------------------------------------
-- Guards
------------------------------------------------------------------------------------------
SELECT ck.overlap_guard_ddl(NULL, 'during'); -- expect: 22004
SELECT ck.overlap_guard_ddl('bookings', NULL); -- expect: 22004
SELECT ck.overlap_guard_ddl('bookings', 'during', NULL); -- expect: 22004
SELECT ck.overlap_guard_ddl('bookings', 'during', '{NULL}'); -- expect: 22004
SELECT ck.overlap_guard_ddl('bookings', 'during', '{{room}}'); -- expect: 2202E|22023
SELECT ck.overlap_guard_ddl('bookings', 'room'); -- expect: 42804
SELECT ck.overlap_guard_ddl('bookings', 'nope'); -- expect: 42703
SELECT ck.overlap_guard_ddl('bookings', 'during', '{nope}'); -- expect: 42703
SELECT ck.overlap_guard_ddl('bookings', 'during', '{room}', 'bookings_during_no_overlap'); -- expect: 42710
SELECT ck.overlap_guard_ddl('bookings', 'during', '{room}', NULL) LIKE '%EXCLUDE USING gist%'; -- expect: = t
SELECT ck.overlap_guard_ddl('bookings', 'during', array_fill('room'::name, ARRAY[1000])) IS NOT NULL; -- expect: = t or 42701|54011|22023
SELECT ck.overlap_guard_ddl('slots', 'busy', '{room}') LIKE '%busy WITH%'; -- expect: = t
SELECT ck.overlap_guard_ddl('slots', 'n') IS NOT NULL; -- expect: = t
SELECT ck.overlap_guard_ddl('jt', 'j'); -- expect: 42804
SELECT ck.overlap_guard_ddl('stock_v', 'q4'); -- expect: 42809
SELECT ck.overlap_guard_ddl('ft', 'during'); -- expect: 42809
SELECT ck.overlap_guard_ddl('part', 'during', '{id}') IS NOT NULL; -- expect: = t
SELECT ck.overlap_guard_ddl('bookings', 'during', '{room}', repeat('c', 100)) IS NOT NULL; -- expect: = t or 42622
SELECT ck.find_overlaps(NULL, 'during'); -- expect: 22004
SELECT ck.find_overlaps('slots', NULL); -- expect: 22004
SELECT ck.find_overlaps('slots', 'during', NULL); -- expect: 22004
SELECT ck.find_overlaps('slots', 'during', '{room}', NULL); -- expect: 22004
SELECT ck.find_overlaps('slots', 'during', '{room}', 0); -- expect: 22023
SELECT ck.find_overlaps('slots', 'during', '{room}', -1); -- expect: 22023
-- max_pairs is at most 1,000,000: the pairs are held in memory until returned
SELECT count(*) FROM ck.find_overlaps('slots', 'during', '{room}', 2147483647); -- expect: 22023
SELECT count(*) FROM ck.find_overlaps('slots', 'during', '{room}', 1000000); -- expect: = 0
SELECT count(*) FROM ck.find_overlaps('slots', 'during', '{}', 100000000); -- expect: = 99 or 22023
SELECT count(*) FROM ck.find_overlaps('slots', 'during', '{}', 1); -- expect: = 1
SELECT count(*) FROM ck.find_overlaps('bookings', 'during', '{room}'); -- expect: = 0
SELECT ck.find_overlaps('slots', 'room'); -- expect: 42804
SELECT ck.find_overlaps('stock', 'q4'); -- expect: 42804
SELECT ck.find_overlaps('slots', 'during', '{{room}}'); -- expect: 2202E|22023
SELECT count(*) FROM ck.find_overlaps('slots', 'busy') ; -- expect: ok
SELECT ck.find_overlaps(:'other_tmp', 'during'); -- expect: 42501|0A000
SELECT ck.find_overlaps('ft', 'during'); -- expect: 42809
SELECT count(*) FROM ck.find_overlaps('part', 'during', '{id}'); -- expect: = 0
SELECT count(*) FROM ck.find_overlaps('my_tmp', 'during'); -- expect: = 0
BEGIN; SELECT ck.add_overlap_guard('slots', 'during'); ROLLBACK; -- expect: 23P01
BEGIN; SELECT ck.add_overlap_guard('slots', 'during', '{room}') IS NOT NULL; ROLLBACK; -- expect: = t
-- Exclusion constraints on partitioned tables (keyed by the partition key) came in 17.
BEGIN; SELECT ck.add_overlap_guard('part', 'during', '{id}') IS NOT NULL; ROLLBACK; -- expect: 0A000; from 17: = t
BEGIN; SELECT ck.add_overlap_guard('orders', 'state'); ROLLBACK; -- expect: 42804
BEGIN; SELECT ck.add_overlap_guard('ft', 'during'); ROLLBACK; -- expect: 42809
BEGIN; SELECT ck.add_overlap_guard(:'other_tmp', 'during'); ROLLBACK; -- expect: 42501|0A000
BEGIN; SELECT ck.add_overlap_guard(NULL, 'during'); ROLLBACK; -- expect: 22004
BEGIN; SELECT ck.add_overlap_guard('bookings', 'during', '{room}') IS NOT NULL; ROLLBACK; -- expect: = t
BEGIN; SELECT ck.add_overlap_guard('my_tmp', 'during') IS NOT NULL; ROLLBACK; -- expect: 23502
BEGIN; DELETE FROM my_tmp; SELECT ck.add_overlap_guard('my_tmp', 'during') IS NOT NULL; ROLLBACK; -- expect: = t
SELECT ck.unique_guard_ddl(NULL, '{code}'); -- expect: 22004
SELECT ck.unique_guard_ddl('stock', NULL); -- expect: 22004
SELECT ck.unique_guard_ddl('stock', '{}'); -- expect: 22023|42P10
SELECT ck.unique_guard_ddl('stock', '{NULL}'); -- expect: 22004
SELECT ck.unique_guard_ddl('stock', '{{code}}'); -- expect: 2202E|22023
SELECT ck.unique_guard_ddl('stock', '{nope}'); -- expect: 42703
SELECT ck.unique_guard_ddl('stock', '{code}', 'q4 > 0') LIKE 'CREATE UNIQUE INDEX CONCURRENTLY%'; -- expect: = t
SELECT ck.unique_guard_ddl('stock', '{code}', 'q4 > 0; DROP TABLE stock'); -- expect: 42601
SELECT ck.unique_guard_ddl('stock', '{code}', 'q4 > 0) WHERE (true'); -- expect: 42601
SELECT ck.unique_guard_ddl('stock', '{code}', ''); -- expect: 42601|22023
SELECT ck.unique_guard_ddl('stock', '{code}', 'random() > 0.5'); -- expect: 42P17
SELECT ck.unique_guard_ddl('stock', '{code}', '(SELECT true)'); -- expect: 0A000
SELECT ck.unique_guard_ddl('stock', '{code}', 'count(*) > 1'); -- expect: 42803
SELECT ck.unique_guard_ddl('stock', '{code}', 'nope > 1'); -- expect: 42703
SELECT ck.unique_guard_ddl('stock', '{code}', 'q4'); -- expect: 42804
SELECT ck.unique_guard_ddl('stock', '{code}', '$1 > 0'); -- expect: 42P02
SELECT ck.unique_guard_ddl('stock', '{code}', 'ctid > ''(0,1)'''); -- expect: 0A000|42P17 or ok
SELECT ck.unique_guard_ddl('stock', '{code}', repeat('q4 > 0 AND ', 2000) || 'true') IS NOT NULL; -- expect: = t
SELECT ck.unique_guard_ddl('stock', '{code}', repeat('(', 100000) || 'true' || repeat(')', 100000)); -- expect: 54001|42601
SELECT ck.unique_guard_ddl('stock', '{code,code}') IS NOT NULL; -- expect: = t or 42701
SELECT ck.unique_guard_ddl('stock_v', '{sku}'); -- expect: 42809
SELECT ck.unique_guard_ddl('ft', '{sku}'); -- expect: 42809
SELECT ck.unique_guard_ddl('part', '{id}') IS NOT NULL; -- expect: = t
SELECT ck.unique_guard_ddl(:'other_tmp', '{id}') IS NOT NULL; -- expect: = t or 42501|0A000

------------------------------------------------------------------------------------------
-- Checks
------------------------------------------------------------------------------------------
SELECT count(*) >= 0 FROM ck.volatility_audit(); -- expect: = t
SELECT count(*) >= 0 FROM ck.volatility_audit(NULL); -- expect: = t
SELECT count(*) FROM ck.volatility_audit('nope'); -- expect: 3F000
SELECT count(*) FROM ck.volatility_audit(''); -- expect: 3F000|22023
SELECT count(*) >= 0 FROM ck.volatility_audit('pg_catalog'); -- expect: = t
SELECT count(*) >= 0 FROM ck.volatility_audit(:'other_schema'); -- expect: = t
SELECT count(*) >= 0 FROM ck.lock_audit(); -- expect: = t
SELECT count(*) >= 0 FROM ck.lock_audit(NULL); -- expect: = t
SELECT count(*) FROM ck.lock_audit('nope'); -- expect: 3F000
SELECT count(*) FROM ck.lock_audit(''); -- expect: 3F000|22023
SELECT count(*) >= 0 FROM ck.lock_audit('pg_catalog'); -- expect: = t
SELECT count(*) >= 0 FROM ck.lock_audit(:'other_schema'); -- expect: = t
SELECT count(*) >= 0 FROM ck.race_audit(); -- expect: = t
SELECT count(*) >= 0 FROM ck.race_audit(NULL); -- expect: = t
SELECT count(*) FROM ck.race_audit('nope'); -- expect: 3F000
SELECT count(*) FROM ck.race_audit(''); -- expect: 3F000|22023
SELECT count(*) >= 0 FROM ck.race_audit('pg_catalog'); -- expect: = t
SELECT count(*) >= 0 FROM ck.race_audit(:'other_schema'); -- expect: = t
SELECT count(*) >= 0 FROM ck.race_reports(); -- expect: = t
SELECT ck_internal.race_check(NULL, NULL, NULL, NULL, NULL); -- expect: = t
SELECT ck_internal.race_check(0, '4000000000', '(4294967295,65535)', NULL, NULL); -- expect: = t
SELECT ck.scan_check(NULL); -- expect: 22004
SELECT ck.scan_check(''); -- expect: 22023|42601
SELECT ck.scan_check('SELECT 1; SELECT 2'); -- expect: 22023|42601|0A000
SELECT ck.scan_check('VACUUM'); -- expect: 22023|0A000|42809
SELECT ck.scan_check('EXPLAIN SELECT 1'); -- expect: 22023|0A000|42809
SELECT ck.scan_check('CREATE TABLE zz (a int)'); -- expect: 22023|0A000|42809
SELECT ck.scan_check('COPY stock TO STDOUT'); -- expect: 22023|0A000|42809
SELECT ck.scan_check('SELECT * FROM nope'); -- expect: 42P01
SELECT ck.scan_check('SELECT $1'); -- expect: 42P02
SELECT ck.scan_check('SELECT ' || repeat('(', 100000) || '1' || repeat(')', 100000)); -- expect: 54001|42601
SELECT count(*) FROM ck.scan_check('SELECT * FROM stock'); -- expect: = 1
SELECT count(*) >= 1 FROM ck.scan_check('DELETE FROM stock'); -- expect: = t
SELECT count(*) FROM stock; -- expect: = 104
SELECT count(*) FROM ck.scan_check('SELECT pg_sleep(100)'); -- expect: = 0
SELECT count(*) >= 1 FROM ck.scan_check('SELECT * FROM stock FOR UPDATE'); -- expect: = t
SELECT count(*) >= 1 FROM ck.scan_check('SELECT * FROM ' || :'other_tmp'); -- expect: ok or 42501|0A000
