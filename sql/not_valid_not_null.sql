-- 18+: pg_attribute.attnotnull is also true for a NOT VALID not-null constraint, which rows
-- older than it may break. The overlap guard trusts only a validated one: otherwise its DDL
-- keeps SET NOT NULL, so a NULL range (which escapes the exclusion constraint) cannot stay.
CREATE TABLE desks_booked (id int PRIMARY KEY, during int4range);
INSERT INTO desks_booked VALUES (1, '[1,5)'), (2, NULL);
ALTER TABLE desks_booked ADD CONSTRAINT desks_booked_during_nn NOT NULL during NOT VALID;
SELECT a.attnotnull, c.convalidated FROM pg_attribute a, pg_constraint c
WHERE a.attrelid = 'desks_booked'::regclass AND a.attname = 'during' AND c.conname = 'desks_booked_during_nn';

-- not validated: the DDL sets NOT NULL
SELECT ck.overlap_guard_ddl('desks_booked', 'during');
-- so the guard cannot go on over the NULL range, and nothing changes
SELECT test.outcome($$SELECT ck.add_overlap_guard('desks_booked', 'during')$$);
SELECT count(*) AS constraints FROM pg_constraint WHERE conrelid = 'desks_booked'::regclass AND contype IN ('x', 'c');
-- once the NULL row is gone it goes on, and the not-null constraint is validated on the way
DELETE FROM desks_booked WHERE id = 2;
SELECT ck.add_overlap_guard('desks_booked', 'during');
SELECT conname, contype, convalidated FROM pg_constraint WHERE conname LIKE 'desks_booked_during%' ORDER BY conname;
SELECT test.outcome($$INSERT INTO desks_booked VALUES (3, NULL)$$);

-- the generated DDL run by hand does the same
CREATE TABLE desks_held (id int PRIMARY KEY, during int4range);
INSERT INTO desks_held VALUES (1, '[1,5)');
ALTER TABLE desks_held ADD CONSTRAINT desks_held_during_nn NOT NULL during NOT VALID;
SELECT ck.overlap_guard_ddl('desks_held', 'during') AS ddl \gset
:ddl
SELECT convalidated FROM pg_constraint WHERE conname = 'desks_held_during_nn';
SELECT test.outcome($$INSERT INTO desks_held VALUES (2, NULL)$$);

-- a validated not-null constraint: the DDL skips the step
CREATE TABLE desks_free (id int PRIMARY KEY, during int4range);
ALTER TABLE desks_free ADD CONSTRAINT desks_free_during_nn NOT NULL during NOT VALID;
ALTER TABLE desks_free VALIDATE CONSTRAINT desks_free_during_nn;
SELECT ck.overlap_guard_ddl('desks_free', 'during');

DROP TABLE desks_booked, desks_held, desks_free;
