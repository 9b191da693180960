-- Rule R9: after ALTER EXTENSION UPDATE from 0.4.0, every 0.x call form of the conditional
-- change, optimistic locking and lock families keeps its meaning or fails loudly: 42883 (no
-- such function), 42703 whose HINT gives the 1.0 argument order, an error where 0.x returned
-- false or NULL, or 42704 for a lock namespace never created. Never a success with a new meaning.
\set regress_db :DBNAME
SET client_min_messages = warning;
DROP DATABASE IF EXISTS ck_upgrade_calls;
CREATE DATABASE ck_upgrade_calls;
\c ck_upgrade_calls
SET client_min_messages = warning;
CREATE EXTENSION concurrency_kit VERSION '0.4.0';
CREATE FUNCTION outcome(statement text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    hint text;
    result text;
BEGIN
    EXECUTE statement INTO result;
    RETURN 'ok: ' || coalesce(result, 'NULL');
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    -- 42883's own HINT differs between majors (19 reworded it): the message says enough.
    RETURN SQLSTATE || ': ' || SQLERRM || CASE WHEN SQLSTATE = '42883' THEN ''
                                               ELSE coalesce(' [' || nullif(hint, '') || ']', '') END;
END $$;
CREATE TABLE stock (sku int PRIMARY KEY, qty int NOT NULL, code text UNIQUE NOT NULL,
                    state text NOT NULL DEFAULT 'free', version bigint NOT NULL DEFAULT 1);
INSERT INTO stock (sku, qty, code) VALUES (42, 10, 'A1'), (43, 10, 'B2');
CREATE TABLE big (id bigint PRIMARY KEY, qty int NOT NULL);
INSERT INTO big VALUES (5000000000, 10);
CREATE TABLE tagged (id uuid PRIMARY KEY, qty int NOT NULL);
INSERT INTO tagged VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 10);
-- a namespace registered under 0.4.0 stays registered
SELECT ck.lock_namespace('orders') IS NOT NULL AS registered_under_0_4_0;
-- with the 1.0 library installed and before the update, the 0.4.0 functions keep their 0.x
-- arguments and meaning (a numeric result, false or NULL where 1.0's plain forms raise)
SELECT call, outcome(call) FROM (VALUES
    ($c$SELECT ck.try_decrement('stock', 'qty', 42, 1)$c$),
    ($c$SELECT pg_typeof(ck.decrement('stock', 'qty', 'A1'::text, 1, 'code'))$c$),
    ($c$SELECT ck.try_increment('stock', 'qty', 42, 5, 1e100)$c$),
    ($c$SELECT ck.try_increment('stock', 'qty', 42, 5, 10.5)$c$),
    ($c$SELECT ck.increment('stock', 'qty', 42, 5, 10)$c$),
    ($c$SELECT ck.transition('stock', 42, 'state', 'free', 'held')$c$),
    ($c$SELECT ck.transition('stock', 42, 'state', 'free', 'held')$c$),
    ($c$SELECT ck.transition_or_raise('stock', 42, 'state', 'free', 'held')$c$),
    ($c$SELECT ck.update_if_version('stock', 43, 2, '{}')$c$),
    ($c$SELECT ck.update_if_version_or_raise('stock', 43, 2, '{}')$c$)
) AS calls(call);
SELECT sku, qty, state, version FROM stock ORDER BY sku;
UPDATE stock SET qty = 10, state = 'free';

ALTER EXTENSION concurrency_kit UPDATE TO '1.0.0';

SELECT call, outcome(call) FROM (VALUES
    -- counters, 0.x order (table, column, key, ...): an integer, bigint or uuid key finds no
    -- function; a text key is read as the column, which does not exist (HINT: the 1.0 order)
    ($c$SELECT ck.try_decrement('stock', 'qty', 42)$c$),
    ($c$SELECT ck.try_decrement('stock', 'qty', 42, 1)$c$),
    ($c$SELECT ck.try_decrement('big', 'qty', 5000000000, 1)$c$),
    ($c$SELECT ck.try_decrement('tagged', 'qty', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 1)$c$),
    ($c$SELECT ck.try_decrement('stock', 'qty', 'A1', 1, 'code')$c$),
    ($c$SELECT ck.try_decrement('stock', 'qty', 'A1'::text, 1, key_column => 'code')$c$),
    ($c$SELECT ck.decrement('stock', 'qty', 42)$c$),
    ($c$SELECT ck.decrement('stock', 'qty', 42, 1)$c$),
    ($c$SELECT ck.decrement('stock', 'qty', 42::bigint, 1)$c$),
    ($c$SELECT ck.decrement('stock', 'qty', 'A1', 1, 'code')$c$),
    ($c$SELECT ck.try_increment('stock', 'qty', 42, 1, 100)$c$),
    ($c$SELECT ck.try_increment('stock', 'qty', 'A1', 1, 100, 'code')$c$),
    ($c$SELECT ck.try_increment('stock', 'qty', 42, 1, 100.5)$c$),
    ($c$SELECT ck.increment('stock', 'qty', 42, 1, 100)$c$),
    ($c$SELECT ck.increment('stock', 'qty', 'A1'::varchar, 1, 100, 'code')$c$),
    -- named arguments keep their names: the same meaning
    ($c$SELECT ck.try_decrement(tbl => 'stock', col => 'qty', key => 42, amount => 1)$c$),
    ($c$SELECT ck.increment(tbl => 'stock', col => 'qty', key => 42, amount => 1, upper_bound => 100)$c$),
    -- transition: the same arguments; true as before, an error where 0.x returned false
    ($c$SELECT ck.transition('stock', 42, 'state', 'free', 'held')$c$),
    ($c$SELECT ck.transition('stock', 42, 'state', 'free', 'held')$c$),
    ($c$SELECT ck.transition('stock', 'A1', 'state', 'held', 'free', 'code')$c$),
    ($c$SELECT ck.transition_or_raise('stock', 42, 'state', 'free', 'held')$c$),
    ($c$SELECT ck.transition_or_raise('stock', 42, 'state', 'free', 'held', 'sku')$c$),
    -- update_if_version: the new version as before, an error where 0.x returned NULL
    ($c$SELECT ck.update_if_version('stock', 43, 1, '{"qty": 7}')$c$),
    ($c$SELECT ck.update_if_version('stock', 43, 1, '{"qty": 8}')$c$),
    ($c$SELECT ck.update_if_version('stock', 44, 1, '{"qty": 8}')$c$),
    ($c$SELECT ck.update_if_version_or_raise('stock', 43, 1, '{"qty": 8}')$c$),
    ($c$SELECT ck.update_if_version_or_raise('stock', 43, 2, '{}', 'version', 'sku')$c$),
    -- locks: the same arguments and meaning; a name never created is an error, not a new namespace
    ($c$SELECT ck.xact_lock(1, 2)$c$),
    ($c$SELECT ck.xact_lock(1, 2, '1 second')$c$),
    ($c$SELECT ck.try_xact_lock(1, 2)$c$),
    ($c$SELECT ck.xact_lock('orders', 2)$c$),
    ($c$SELECT ck.try_xact_lock('orders', 2)$c$),
    ($c$SELECT ck.xact_lock('payments', 2)$c$),
    ($c$SELECT ck.try_xact_lock('payments')$c$),
    ($c$SELECT ck.session_lock('payments', 1)$c$),
    ($c$SELECT ck.session_lock('orders', 3) || ck.session_unlock('orders', 3)::text$c$),
    ($c$SELECT ck.lock_rows('stock', ARRAY[43, 42])$c$),
    ($c$SELECT ck.lock_rows('stock', ARRAY['B2', 'A1'], 'update', '1 second', 'code')$c$)
) AS calls(call);
SELECT sku, qty, state, version FROM stock ORDER BY sku;
SELECT count(*) AS namespaces_created_by_lock_calls FROM ck.lock_namespaces WHERE name = 'payments';

\c :regress_db
SET client_min_messages = warning;
DROP DATABASE ck_upgrade_calls;
