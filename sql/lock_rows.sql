-- ck.lock_rows: the rows with those keys, in the mode asked for; bad input. keys is "any":
-- a literal array needs no cast. Outside a transaction block it warns (25P01).
CREATE EXTENSION IF NOT EXISTS pgrowlocks;
CREATE TABLE parents (id int PRIMARY KEY, code text UNIQUE NOT NULL, n int NOT NULL DEFAULT 0);
INSERT INTO parents SELECT g, 'p' || g FROM generate_series(1, 10) g;
CREATE VIEW parent_locks AS
    SELECT p.id, l.modes FROM pgrowlocks('parents') l JOIN parents p ON p.ctid = l.locked_row;

-- how many rows were locked: duplicates once, a key without a row locks nothing
BEGIN;
SELECT ck.lock_rows('parents', ARRAY[5, 3, 9, 3, 42]) AS locked;
SELECT * FROM parent_locks ORDER BY id;
ROLLBACK;

-- each mode, by another key column, with keys of another integer type and text keys
BEGIN;
SELECT ck.lock_rows('parents', ARRAY[1]::bigint[], 'update'),
       ck.lock_rows('parents', ARRAY[2]::smallint[], 'share'),
       ck.lock_rows('parents', ARRAY['p4'], 'KEY SHARE', key_column => 'code'),
       ck.lock_rows('parents', '{}'::int[]);
SELECT * FROM parent_locks ORDER BY id;
ROLLBACK;

-- no wait (timeout '0') and a timeout, on rows nobody else holds: taken at once
BEGIN;
SELECT ck.lock_rows('parents', ARRAY[6, 7], timeout => '0'), ck.lock_rows('parents', ARRAY[8], 'update', '2 s');
SELECT * FROM parent_locks ORDER BY id;
SHOW lock_timeout;   -- the call's bound did not leak
ROLLBACK;

-- keys without a cast: a literal is read as an array of the key column's type, a text[] too
BEGIN;
SELECT ck.lock_rows('parents', '{p1,p3}', key_column => 'code'), ck.lock_rows('parents', '{5,6}'),
       ck.lock_rows('parents', ARRAY['8', '9']::text[]);
SELECT * FROM parent_locks ORDER BY id;
ROLLBACK;

-- outside a transaction block: a warning, and the locks are gone when the statement ends
\set VERBOSITY sqlstate
SELECT ck.lock_rows('parents', ARRAY[1, 2]);
\set VERBOSITY default
SELECT ck.lock_rows('parents', ARRAY[1, 2]);
SELECT count(*) AS locked_after_the_statement FROM parent_locks;

-- bad input: clear errors
SELECT test.outcome($$SELECT ck.lock_rows('parents', ARRAY[1], 'exclusive')$$);
SELECT test.outcome($$SELECT ck.lock_rows('parents', ARRAY[1], NULL)$$);
SELECT test.outcome($$SELECT ck.lock_rows('parents', ARRAY[1, NULL])$$);
SELECT test.outcome($$SELECT ck.lock_rows('parents', NULL::int[])$$);
SELECT test.outcome($$SELECT ck.lock_rows(NULL, ARRAY[1])$$);
SELECT test.outcome($$SELECT ck.lock_rows('parents', ARRAY[1], timeout => '-1 s')$$);
SELECT test.outcome($$SELECT ck.lock_rows('parents', ARRAY['x'])$$);
SELECT test.outcome($$SELECT ck.lock_rows('parents', '{1,x}')$$);
SELECT test.outcome($$SELECT ck.lock_rows('parents', 1)$$);
SELECT test.outcome($$SELECT ck.lock_rows('parents', ARRAY[now()])$$);
SELECT test.outcome($$SELECT ck.lock_rows('parents', ARRAY[1], key_column => 'n')$$);
SELECT test.outcome($$SELECT ck.lock_rows('parent_locks', ARRAY[1])$$);
