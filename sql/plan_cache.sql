-- Prepared plans are kept per table and dropped when the table changes: after DDL a call
-- gives the right answer or a clear error, never a stale plan.
CREATE TABLE pc (id int PRIMARY KEY, qty int NOT NULL, spare int NOT NULL);
INSERT INTO pc VALUES (1, 100, 500);
SELECT ck.try_decrement('pc', 1, 'qty', 1);

-- swap the column names: 'qty' now means the former spare column
ALTER TABLE pc RENAME COLUMN qty TO tmp;
SELECT test.outcome($$SELECT ck.try_decrement('pc', 1, 'qty', 1)$$);
ALTER TABLE pc RENAME COLUMN spare TO qty;
ALTER TABLE pc RENAME COLUMN tmp TO spare;
SELECT ck.try_decrement('pc', 1, 'qty', 1);
SELECT * FROM pc;

-- rename the table and move it to another schema: the regclass still finds it
ALTER TABLE pc RENAME TO pc2;
SELECT ck.try_decrement('pc2', 1, 'qty', 1);
CREATE SCHEMA other;
ALTER TABLE pc2 SET SCHEMA other;
SELECT ck.try_decrement('other.pc2', 1, 'qty', 1);

-- change the counter's type: bigint works, numeric and text are refused
ALTER TABLE other.pc2 ALTER COLUMN qty TYPE bigint;
SELECT ck.try_decrement('other.pc2', 1, 'qty', 1);
ALTER TABLE other.pc2 ALTER COLUMN qty TYPE numeric(10,1);
SELECT test.outcome($$SELECT ck.try_decrement('other.pc2', 1, 'qty', 1)$$);
ALTER TABLE other.pc2 ALTER COLUMN qty TYPE text;
SELECT test.outcome($$SELECT ck.try_decrement('other.pc2', 1, 'qty', 1)$$);

-- change the primary key: the new key column is used
ALTER TABLE other.pc2 ALTER COLUMN qty TYPE int USING qty::numeric::int;
ALTER TABLE other.pc2 DROP CONSTRAINT pc_pkey;
SELECT test.outcome($$SELECT ck.try_decrement('other.pc2', 1, 'qty', 1)$$);
ALTER TABLE other.pc2 ADD PRIMARY KEY (spare);
SELECT ck.try_decrement('other.pc2', 99, 'qty', 1);
SELECT * FROM other.pc2;

-- drop and re-create under the same name: the new table, not the old plan
DROP TABLE other.pc2;
CREATE TABLE other.pc2 (id int PRIMARY KEY, qty bigint NOT NULL);
INSERT INTO other.pc2 VALUES (1, 7);
SELECT ck.try_decrement('other.pc2', 1, 'qty', 1);
DROP TABLE other.pc2;
SELECT test.outcome($$SELECT ck.try_decrement('other.pc2', 1, 'qty', 1)$$);

-- a trigger that changes another table and calls us again while our plan executes:
-- the stale plan of that other table is replaced without freeing anything in use
CREATE TABLE orders (id int PRIMARY KEY, qty int NOT NULL);
CREATE TABLE audit (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO orders VALUES (1, 10);
INSERT INTO audit VALUES (1, 1000);
CREATE FUNCTION orders_touch_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'ALTER TABLE public.audit ALTER COLUMN n SET DEFAULT ' || NEW.qty;
    PERFORM ck.try_decrement('public.audit', 1, 'n', 1);
    RETURN NEW;
END $$;
CREATE TRIGGER orders_touch_audit BEFORE UPDATE ON orders
    FOR EACH ROW EXECUTE FUNCTION orders_touch_audit();
SELECT ck.try_decrement('audit', 1, 'n', 1);
SELECT ck.try_decrement('orders', 1, 'qty', 1);
SELECT ck.try_decrement('orders', 1, 'qty', 1);
SELECT ck.try_decrement('audit', 1, 'n', 1);
SELECT (SELECT qty FROM orders) AS orders_qty, (SELECT n FROM audit) AS audit_n;

-- a literal key is read as the key column's type when the plan is made: after the key column
-- changes type, the same literal call is planned again for the new type
CREATE TABLE relabel (code int PRIMARY KEY, n int NOT NULL);
INSERT INTO relabel VALUES (7, 10);
SELECT ck.try_decrement('relabel', '7', 'n');
ALTER TABLE relabel ALTER COLUMN code TYPE text;
UPDATE relabel SET code = 'A7';
SELECT ck.try_decrement('relabel', 'A7', 'n'), ck.try_decrement('relabel', '7', 'n');
SELECT * FROM relabel;
