-- Conditional change: behaviour, counter types, keys, and bad input.
CREATE TABLE inventory (sku int PRIMARY KEY, qty int NOT NULL, note text);
INSERT INTO inventory VALUES (42, 3, 'a'), (43, 10, 'b');

-- try_decrement: the new value, or NULL when the condition fails; never negative
SELECT ck.try_decrement('inventory', 'qty', 42, 2);
SELECT ck.try_decrement('inventory', 'qty', 42, 2);
SELECT ck.try_decrement('inventory', 'qty', 42);
SELECT ck.try_decrement('inventory', 'qty', 42);
SELECT ck.try_decrement('inventory', 'qty', 999);
SELECT sku, qty FROM inventory ORDER BY sku;

-- decrement raises distinct SQLSTATEs with the values in message and DETAIL
SELECT test.outcome($$SELECT ck.decrement('inventory', 'qty', 43, 11)$$);
SELECT test.outcome($$SELECT ck.decrement('inventory', 'qty', 999, 1)$$);
SELECT ck.decrement('inventory', 'qty', 43, 10);
SELECT qty FROM inventory WHERE sku = 43;

-- try_increment / increment: never past the bound
UPDATE inventory SET qty = 95 WHERE sku = 43;
SELECT ck.try_increment('inventory', 'qty', 43, 5, 100);
SELECT ck.try_increment('inventory', 'qty', 43, 1, 100);
SELECT test.outcome($$SELECT ck.increment('inventory', 'qty', 43, 1, 100)$$);
SELECT test.outcome($$SELECT ck.increment('inventory', 'qty', 999, 1, 100)$$);
SELECT ck.increment('inventory', 'qty', 43, 1, 101);

-- counter types: smallint, bigint, numeric, and a domain over integer
CREATE DOMAIN nonneg AS integer CHECK (VALUE >= 0);
CREATE TABLE counters (id bigint PRIMARY KEY, s smallint, b bigint, n numeric(12,2), d nonneg);
INSERT INTO counters VALUES (1, 5, 5000000000, 7.50, 4);
SELECT ck.try_decrement('counters', 's', 1, 5), ck.try_decrement('counters', 'b', 1, 1),
       ck.try_decrement('counters', 'n', 1, 7), ck.try_decrement('counters', 'd', 1, 4);
SELECT * FROM counters;

-- keys: bigint primary key called with an int key, explicit key_column, wrong key type
CREATE TABLE accounts (id serial PRIMARY KEY, email text UNIQUE NOT NULL, balance numeric NOT NULL);
INSERT INTO accounts (email, balance) VALUES ('a@example.com', 100), ('b@example.com', 5);
SELECT ck.try_decrement('accounts', 'balance', 'a@example.com'::text, 30, key_column => 'email');
SELECT ck.try_decrement('accounts', 'balance', 2::bigint, 5);
SELECT ck.try_decrement('accounts', 'balance', 'a@example.com'::text, 1);
SELECT ck.try_decrement('accounts', 'balance', 1, 1, key_column => 'balance');
SELECT ck.try_decrement('accounts', 'balance', 1, 1, key_column => 'nope');
SELECT id, email, balance FROM accounts ORDER BY id;

-- transition: exactly one state change, enum and text columns
CREATE TYPE seat_state AS ENUM ('free', 'held', 'booked');
CREATE TABLE seats (id int PRIMARY KEY, state seat_state NOT NULL DEFAULT 'free', label text);
INSERT INTO seats (id, label) VALUES (1, 'open'), (2, 'open');
SELECT ck.transition('seats', 1, 'state', 'free', 'booked');
SELECT ck.transition('seats', 1, 'state', 'free', 'booked');
SELECT ck.transition('seats', 2, 'label', 'open', 'closed');
SELECT ck.transition('seats', 99, 'state', 'free', 'booked');
SELECT test.outcome($$SELECT ck.transition('seats', 2, 'state', 'free', 'sold')$$);  -- not a seat_state
SELECT test.outcome($$SELECT ck.transition_or_raise('seats', 1, 'state', 'free', 'held')$$);
SELECT test.outcome($$SELECT ck.transition_or_raise('seats', 99, 'state', 'free', 'held')$$);
SELECT ck.transition_or_raise('seats', 1, 'state', 'booked', 'free');
SELECT id, state, label FROM seats ORDER BY id;

-- bad input: a clear error with a fitting SQLSTATE, and nothing changed
CREATE VIEW inventory_view AS SELECT * FROM inventory;
CREATE TABLE no_pk (sku int, qty int);
CREATE TABLE two_col_pk (a int, b int, qty int, PRIMARY KEY (a, b));
SELECT statement, test.outcome(statement) FROM (VALUES
    ($s$SELECT ck.try_decrement('inventory', 'qty', 43, 0)$s$),
    ($s$SELECT ck.try_decrement('inventory', 'qty', 43, -5)$s$),
    ($s$SELECT ck.try_decrement('inventory', 'qty', 43, NULL)$s$),
    ($s$SELECT ck.try_decrement('inventory', 'qty', NULL::int, 1)$s$),
    ($s$SELECT ck.try_decrement(NULL, 'qty', 43, 1)$s$),
    ($s$SELECT ck.try_decrement('inventory', NULL, 43, 1)$s$),
    ($s$SELECT ck.try_increment('inventory', 'qty', 43, 1, NULL)$s$),
    ($s$SELECT ck.transition('seats', 2, 'state', NULL, 'held')$s$),
    ($s$SELECT ck.transition('seats', 2, 'state', 'free', NULL)$s$),
    ($s$SELECT ck.try_decrement('inventory', 'missing', 43, 1)$s$),
    ($s$SELECT ck.try_decrement('inventory', 'note', 43, 1)$s$),
    ($s$SELECT ck.try_decrement('inventory', 'ctid', 43, 1)$s$),
    ($s$SELECT ck.try_decrement('inventory', 'qty; DROP TABLE inventory', 43, 1)$s$),
    ($s$SELECT ck.try_decrement('inventory', 'qty', 'x'::text, 1)$s$),
    ($s$SELECT ck.try_decrement('no_such_table', 'qty', 43, 1)$s$),
    ($s$SELECT ck.try_decrement(0::oid::regclass, 'qty', 43, 1)$s$),
    ($s$SELECT ck.try_decrement('inventory_pkey', 'qty', 43, 1)$s$),
    ($s$SELECT ck.try_decrement('inventory_view', 'qty', 43, 1)$s$),
    ($s$SELECT ck.try_decrement('no_pk', 'qty', 1, 1)$s$),
    ($s$SELECT ck.try_decrement('two_col_pk', 'qty', 1, 1)$s$),
    ($s$SELECT ck.try_increment('inventory', 'note', 43, 1, 10)$s$),
    ($s$SELECT ck.transition('seats', 2, 'missing', 'free', 'held')$s$),
    ($s$SELECT ck.transition('seats', 2, 'state', 'free', 'held', key_column => 'id; --')$s$),
    ($s$SELECT ck.try_increment('counters', 's', 1, 40000, 100000)$s$)
) AS bad(statement);
SELECT sku, qty FROM inventory ORDER BY sku;

-- hostile but legal identifiers are quoted, never spliced
CREATE TABLE "odd ""table""; --" ("key col" int PRIMARY KEY, "Qty; DROP TABLE inventory" int);
INSERT INTO "odd ""table""; --" VALUES (1, 5);
SELECT ck.try_decrement('"odd ""table""; --"', 'Qty; DROP TABLE inventory', 1, 2);
SELECT * FROM "odd ""table""; --";
SELECT count(*) AS inventory_still_there FROM inventory;

-- privileges: the caller's own rights apply (SECURITY INVOKER)
CREATE ROLE regress_ck_reader;
GRANT USAGE ON SCHEMA ck, test TO regress_ck_reader;
GRANT SELECT ON inventory TO regress_ck_reader;
SET ROLE regress_ck_reader;
SELECT test.outcome($$SELECT ck.try_decrement('inventory', 'qty', 43, 1)$$);
SELECT test.outcome($$SELECT ck.decrement('inventory', 'qty', 43, 1)$$);
RESET ROLE;
GRANT UPDATE ON inventory TO regress_ck_reader;
SET ROLE regress_ck_reader;
SELECT ck.try_decrement('inventory', 'qty', 43, 1);
RESET ROLE;
REVOKE ALL ON inventory FROM regress_ck_reader;
REVOKE ALL ON SCHEMA ck, test FROM regress_ck_reader;
DROP ROLE regress_ck_reader;
SELECT sku, qty FROM inventory ORDER BY sku;
