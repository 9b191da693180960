-- Conditional change: behaviour, counter types, keys, and bad input. Every call takes
-- (table, key, column, ...); the plain name raises, the try_ form returns NULL (false).
CREATE TABLE inventory (sku int PRIMARY KEY, qty int NOT NULL, note text);
INSERT INTO inventory VALUES (42, 3, 'a'), (43, 10, 'b');

-- try_decrement: the new value, or NULL when the condition fails; never negative
SELECT ck.try_decrement('inventory', 42, 'qty', 2);
SELECT ck.try_decrement('inventory', 42, 'qty', 2);
SELECT ck.try_decrement('inventory', 42, 'qty');
SELECT ck.try_decrement('inventory', 42, 'qty');
SELECT ck.try_decrement('inventory', 999, 'qty');
SELECT sku, qty FROM inventory ORDER BY sku;

-- decrement raises distinct SQLSTATEs with the values in message and DETAIL
SELECT test.outcome($$SELECT ck.decrement('inventory', 43, 'qty', 11)$$);
SELECT test.outcome($$SELECT ck.decrement('inventory', 999, 'qty', 1)$$);
SELECT ck.decrement('inventory', 43, 'qty', 10);
SELECT qty FROM inventory WHERE sku = 43;

-- try_increment / increment: never past the bound
UPDATE inventory SET qty = 95 WHERE sku = 43;
SELECT ck.try_increment('inventory', 43, 'qty', 5, 100);
SELECT ck.try_increment('inventory', 43, 'qty', 1, 100);
SELECT test.outcome($$SELECT ck.increment('inventory', 43, 'qty', 1, 100)$$);
SELECT test.outcome($$SELECT ck.increment('inventory', 999, 'qty', 1, 100)$$);
SELECT ck.increment('inventory', 43, 'qty', 1, 101);
-- the siblings share their defaults: amount 1, and no upper bound but the column type's, which
-- bounds a larger upper_bound too
SELECT ck.increment('inventory', 43, 'qty'), ck.try_increment('inventory', 43, 'qty');
SELECT ck.try_decrement('inventory', 43, 'qty'), ck.decrement('inventory', 43, 'qty');
UPDATE inventory SET qty = 2147483646 WHERE sku = 43;
SELECT ck.try_increment('inventory', 43, 'qty'), ck.try_increment('inventory', 43, 'qty');
SELECT test.outcome($$SELECT ck.increment('inventory', 43, 'qty')$$);
SELECT test.outcome($$SELECT ck.increment('inventory', 43, 'qty', 9223372036854775807)$$);
SELECT ck.try_increment('inventory', 43, 'qty', 1, -9223372036854775808);  -- no value is that low
SELECT ck.try_increment('inventory', 43, 'qty', 1, 9223372036854775807);
UPDATE inventory SET qty = 101 WHERE sku = 43;
-- the result is bigint, whatever the counter type
SELECT pg_typeof(ck.try_decrement('inventory', 43, 'qty', 0 + 1)), pg_typeof(ck.try_increment('inventory', 43, 'qty'));

-- counter types: smallint, bigint, and a domain over integer; numeric is refused (42804, HINT)
CREATE DOMAIN nonneg AS integer CHECK (VALUE >= 0);
CREATE TABLE counters (id bigint PRIMARY KEY, s smallint, b bigint, n numeric(12,2), d nonneg);
INSERT INTO counters VALUES (1, 5, 5000000000, 7.50, 4);
SELECT ck.try_decrement('counters', 1, 's', 5), ck.try_decrement('counters', 1, 'b', 1),
       ck.try_decrement('counters', 1, 'd', 4);
SELECT test.outcome($$SELECT ck.try_decrement('counters', 1, 'n', 7)$$);
SELECT test.outcome($$SELECT ck.increment('counters', 1, 'n')$$);
SELECT * FROM counters;

-- keys: bigint primary key called with an int key, explicit key_column, wrong key type
CREATE TABLE accounts (id serial PRIMARY KEY, email text UNIQUE NOT NULL, balance integer NOT NULL);
INSERT INTO accounts (email, balance) VALUES ('a@example.com', 100), ('b@example.com', 5);
SELECT ck.try_decrement('accounts', 'a@example.com'::text, 'balance', 30, key_column => 'email');
SELECT ck.try_decrement('accounts', 2::bigint, 'balance', 5);
SELECT ck.try_decrement('accounts', 'a@example.com'::text, 'balance', 1);
SELECT ck.try_decrement('accounts', 1, 'balance', 1, key_column => 'balance');
SELECT ck.try_decrement('accounts', 1, 'balance', 1, key_column => 'nope');
SELECT id, email, balance FROM accounts ORDER BY id;
-- a text key needs no cast: the literal is read as the key column's type (here text, then
-- integer, uuid); one that is not of that type fails as that type's input does
SELECT ck.try_increment('accounts', 'b@example.com', 'balance', key_column => 'email');
SELECT ck.decrement('accounts', '1', 'balance', 10);
SELECT test.outcome($$SELECT ck.decrement('accounts', 'one', 'balance')$$);
SELECT test.outcome($$SELECT ck.decrement('accounts', 'nobody@example.com', 'balance', key_column => 'email')$$);
CREATE TABLE tickets (code uuid PRIMARY KEY, state text NOT NULL, left_over smallint NOT NULL);
INSERT INTO tickets VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'free', 2);
SELECT ck.transition('tickets', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'state', 'free', 'held');
SELECT ck.try_decrement('tickets', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'left_over');
SELECT test.outcome($$SELECT ck.transition('tickets', 'A1', 'state', 'held', 'booked')$$);
-- a key of a string type is read so too; one of another type is compared as the key column's,
-- or refused with the type to pass
SELECT ck.try_transition('tickets', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::text, 'state', 'held', 'booked');
SELECT test.outcome($$SELECT ck.transition('tickets', 42, 'state', 'held', 'booked')$$);
SELECT * FROM tickets;
-- the plan cache is keyed by the key's type as passed: the same table with an unknown, a
-- text and an integer key, each still right after the others
SELECT ck.try_decrement('accounts', '1', 'balance'), ck.try_decrement('accounts', '1'::text, 'balance'),
       ck.try_decrement('accounts', 1, 'balance'), ck.try_decrement('accounts', '1', 'balance');
SELECT balance FROM accounts WHERE id = 1;

-- transition: exactly one state change, enum and text columns
CREATE TYPE seat_state AS ENUM ('free', 'held', 'booked');
CREATE TABLE seats (id int PRIMARY KEY, state seat_state NOT NULL DEFAULT 'free', label text);
INSERT INTO seats (id, label) VALUES (1, 'open'), (2, 'open');
SELECT ck.try_transition('seats', 1, 'state', 'free', 'booked');
SELECT ck.try_transition('seats', 1, 'state', 'free', 'booked');
SELECT ck.try_transition('seats', 2, 'label', 'open', 'closed');
SELECT ck.try_transition('seats', 99, 'state', 'free', 'booked');
SELECT test.outcome($$SELECT ck.try_transition('seats', 2, 'state', 'free', 'sold')$$);  -- not a seat_state
SELECT test.outcome($$SELECT ck.transition('seats', 1, 'state', 'free', 'held')$$);
SELECT test.outcome($$SELECT ck.transition('seats', 99, 'state', 'free', 'held')$$);
SELECT ck.transition('seats', 1, 'state', 'booked', 'free');
SELECT id, state, label FROM seats ORDER BY id;
-- the raising forms' errors name the try_ form; the try_ form returns NULL / false, no error
SELECT test.outcome($$SELECT ck.decrement('inventory', 42, 'qty', 1000)$$),
       ck.try_decrement('inventory', 42, 'qty', 1000) IS NULL AS try_null;
SELECT test.outcome($$SELECT ck.increment('inventory', 43, 'qty', 1, 1)$$),
       ck.try_increment('inventory', 43, 'qty', 1, 1) IS NULL AS try_null;
SELECT test.outcome($$SELECT ck.transition('seats', 1, 'state', 'held', 'free')$$),
       ck.try_transition('seats', 1, 'state', 'held', 'free') AS try_result;
SELECT test.outcome($$SELECT ck.transition('seats', 99, 'state', 'held', 'free')$$),
       ck.try_transition('seats', 99, 'state', 'held', 'free') AS try_result;
-- a 0.x call (table, column, key): an integer key finds no function (42883); a text key is
-- read as the column, which does not exist: 42703, whose HINT gives the 1.0 order
SELECT test.outcome($$SELECT ck.try_decrement('inventory', 'qty', 42, 1)$$);
SELECT test.outcome($$SELECT ck.decrement('accounts', 'balance', 'a@example.com', 1, 'email')$$);
SELECT test.outcome($$SELECT ck.increment('accounts', 'balance', 'a@example.com'::text, 1, 100, 'email')$$);
SELECT test.outcome($$SELECT ck.try_increment('inventory', 'qty', 43, 1, 100)$$);
SELECT test.outcome($$SELECT ck.transition_or_raise('seats', 1, 'state', 'free', 'held')$$);

-- bad input: a clear error with a fitting SQLSTATE, and nothing changed
CREATE VIEW inventory_view AS SELECT * FROM inventory;
CREATE TABLE no_pk (sku int, qty int);
CREATE TABLE two_col_pk (a int, b int, qty int, PRIMARY KEY (a, b));
SELECT statement, test.outcome(statement) FROM (VALUES
    ($s$SELECT ck.try_decrement('inventory', 43, 'qty', 0)$s$),
    ($s$SELECT ck.try_decrement('inventory', 43, 'qty', -5)$s$),
    ($s$SELECT ck.try_decrement('inventory', 43, 'qty', NULL)$s$),
    ($s$SELECT ck.try_decrement('inventory', NULL::int, 'qty', 1)$s$),
    ($s$SELECT ck.try_decrement(NULL, 43, 'qty', 1)$s$),
    ($s$SELECT ck.try_decrement('inventory', 43, NULL, 1)$s$),
    ($s$SELECT ck.try_transition('seats', 2, 'state', NULL, 'held')$s$),
    ($s$SELECT ck.try_transition('seats', 2, 'state', 'free', NULL)$s$),
    ($s$SELECT ck.try_decrement('inventory', 43, 'missing', 1)$s$),
    ($s$SELECT ck.try_decrement('inventory', 43, 'note', 1)$s$),
    ($s$SELECT ck.try_decrement('inventory', 43, 'ctid', 1)$s$),
    ($s$SELECT ck.try_decrement('inventory', 43, 'qty; DROP TABLE inventory', 1)$s$),
    ($s$SELECT ck.try_decrement('inventory', 'x'::text, 'qty', 1)$s$),
    ($s$SELECT ck.try_decrement('no_such_table', 43, 'qty', 1)$s$),
    ($s$SELECT ck.try_decrement(0::oid::regclass, 43, 'qty', 1)$s$),
    ($s$SELECT ck.try_decrement('inventory_pkey', 43, 'qty', 1)$s$),
    ($s$SELECT ck.try_decrement('inventory_view', 43, 'qty', 1)$s$),
    ($s$SELECT ck.try_decrement('no_pk', 1, 'qty', 1)$s$),
    ($s$SELECT ck.try_decrement('two_col_pk', 1, 'qty', 1)$s$),
    ($s$SELECT ck.try_increment('inventory', 43, 'note', 1, 10)$s$),
    ($s$SELECT ck.try_transition('seats', 2, 'missing', 'free', 'held')$s$),
    ($s$SELECT ck.try_transition('seats', 2, 'state', 'free', 'held', key_column => 'id; --')$s$),
    ($s$SELECT ck.try_increment('counters', 1, 's', 40000, 100000)$s$)
) AS bad(statement);
SELECT sku, qty FROM inventory ORDER BY sku;

-- hostile but legal identifiers are quoted, never spliced
CREATE TABLE "odd ""table""; --" ("key col" int PRIMARY KEY, "Qty; DROP TABLE inventory" int);
INSERT INTO "odd ""table""; --" VALUES (1, 5);
SELECT ck.try_decrement('"odd ""table""; --"', 1, 'Qty; DROP TABLE inventory', 2);
SELECT * FROM "odd ""table""; --";
SELECT count(*) AS inventory_still_there FROM inventory;

-- privileges: the caller's own rights apply (SECURITY INVOKER)
CREATE ROLE regress_ck_reader;
GRANT USAGE ON SCHEMA ck, test TO regress_ck_reader;
GRANT SELECT ON inventory TO regress_ck_reader;
SET ROLE regress_ck_reader;
SELECT test.outcome($$SELECT ck.try_decrement('inventory', 43, 'qty', 1)$$);
SELECT test.outcome($$SELECT ck.decrement('inventory', 43, 'qty', 1)$$);
RESET ROLE;
GRANT UPDATE ON inventory TO regress_ck_reader;
SET ROLE regress_ck_reader;
SELECT ck.try_decrement('inventory', 43, 'qty', 1);
RESET ROLE;
REVOKE ALL ON inventory FROM regress_ck_reader;
REVOKE ALL ON SCHEMA ck, test FROM regress_ck_reader;
DROP ROLE regress_ck_reader;
SELECT sku, qty FROM inventory ORDER BY sku;
