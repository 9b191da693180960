-- ck.lock_audit: statements that take FOR UPDATE on a table a foreign key references while
-- the function neither deletes from it nor changes a referenced key (README, "The rules behind it": row lock modes).
CREATE SCHEMA lock_demo;
SET search_path = lock_demo, public;

CREATE TABLE parent (id int PRIMARY KEY, code text UNIQUE, balance numeric NOT NULL DEFAULT 0);
CREATE TABLE child (id int PRIMARY KEY, parent_id int NOT NULL REFERENCES parent (id));
CREATE TABLE lonely (id int PRIMARY KEY, n int NOT NULL DEFAULT 0);
INSERT INTO parent VALUES (1, 'a', 0);

-- SQL, string body, FOR UPDATE then an update of a column no key uses: reported.
CREATE FUNCTION sql_for_update(p int) RETURNS numeric
LANGUAGE sql AS $$
    SELECT balance FROM parent WHERE id = p FOR UPDATE;
    UPDATE parent SET balance = balance + 1 WHERE id = p RETURNING balance;
$$;
-- BEGIN ATOMIC: reported.
CREATE FUNCTION atomic_for_update(p int) RETURNS numeric
LANGUAGE sql
BEGIN ATOMIC
    SELECT balance FROM parent WHERE id = p FOR UPDATE;
END;
-- PL/pgSQL, the statement inside IF and LOOP: reported twice.
CREATE FUNCTION plpgsql_for_update(p int) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE
    b numeric;
BEGIN
    IF p > 0 THEN
        SELECT balance INTO b FROM parent WHERE id = p FOR UPDATE;
    END IF;
    LOOP
        PERFORM 1 FROM parent pa JOIN child c ON c.parent_id = pa.id WHERE pa.id = p FOR UPDATE OF pa;
        EXIT;
    END LOOP;
    RETURN b;
END
$$;
-- A CTE that locks: reported.
CREATE FUNCTION cte_for_update(p int) RETURNS numeric
LANGUAGE sql AS $$
    WITH locked AS (SELECT id, balance FROM parent WHERE id = p FOR UPDATE)
    SELECT balance FROM locked
$$;
-- FOR NO KEY UPDATE: fine.
CREATE FUNCTION no_key_update(p int) RETURNS numeric
LANGUAGE sql AS $$ SELECT balance FROM parent WHERE id = p FOR NO KEY UPDATE $$;
-- FOR UPDATE OF the referencing table only (child is referenced by nobody): fine.
CREATE FUNCTION child_only(p int) RETURNS int
LANGUAGE sql AS $$
    SELECT c.id FROM child c JOIN parent pa ON pa.id = c.parent_id WHERE c.id = p FOR UPDATE OF c
$$;
-- FOR UPDATE on a table nobody references: fine.
CREATE FUNCTION lonely_for_update(p int) RETURNS int
LANGUAGE sql AS $$ SELECT n FROM lonely WHERE id = p FOR UPDATE $$;
-- FOR UPDATE, then DELETE of that table: fine.
CREATE FUNCTION lock_then_delete(p int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM parent WHERE id = p FOR UPDATE;
    DELETE FROM parent WHERE id = p;
END
$$;
-- FOR UPDATE, then an update of a referenced key column (the PRIMARY KEY): fine.
CREATE FUNCTION lock_then_rekey(p int, q int) RETURNS void
LANGUAGE sql AS $$
    SELECT 1 FROM parent WHERE id = p FOR UPDATE;
    UPDATE parent SET id = q WHERE id = p;
$$;
-- code is UNIQUE but no foreign key references it: changing it keeps the advice.
CREATE FUNCTION lock_then_recode(p int) RETURNS void
LANGUAGE sql AS $$
    SELECT 1 FROM parent WHERE id = p FOR UPDATE;
    UPDATE parent SET code = 'z' WHERE id = p;
$$;
-- FOR UPDATE on a sub-select in FROM locks the rows it reads (pushed down), by OF its alias too;
-- OF another item leaves it alone.
CREATE FUNCTION lock_through_subselect(p int) RETURNS numeric
LANGUAGE sql AS $$ SELECT s.balance FROM (SELECT balance FROM parent WHERE id = p) AS s FOR UPDATE $$;
CREATE FUNCTION lock_subselect_of(p int) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE b numeric;
BEGIN
    SELECT s.balance INTO b FROM (SELECT balance FROM parent WHERE id = p) AS s, lonely l WHERE l.id = p FOR UPDATE OF s;
    SELECT s.balance INTO b FROM (SELECT balance FROM parent WHERE id = p) AS s, lonely l WHERE l.id = p FOR UPDATE OF l;
    RETURN b;
END $$;
-- FOR SHARE: not this audit's business.
CREATE FUNCTION for_share(p int) RETURNS numeric
LANGUAGE sql AS $$ SELECT balance FROM parent WHERE id = p FOR SHARE $$;
-- A body that does not parse: a row saying so, and the audit goes on.
SET check_function_bodies = off;
CREATE FUNCTION broken() RETURNS int
LANGUAGE plpgsql AS $$ BEGIN SELEC 1; END $$;
RESET check_function_bodies;

-- Another schema, found without a schema filter, not with one.
CREATE SCHEMA lock_other;
CREATE FUNCTION lock_other.other_for_update(p int) RETURNS numeric
LANGUAGE sql AS $$ SELECT balance FROM lock_demo.parent WHERE id = p FOR UPDATE $$;

SELECT func, statement, advice FROM ck.lock_audit('lock_demo') ORDER BY func::text, statement COLLATE "C";
SELECT func FROM ck.lock_audit('lock_other');
SELECT func FROM ck.lock_audit() WHERE func::text LIKE 'lock_%' OR func::text LIKE '%_for_update%' ORDER BY 1::text;

-- Nothing of the analysis stays: no lock on the audited tables, search_path as it was.
RESET search_path;
BEGIN;
SELECT count(*) > 0 AS found FROM ck.lock_audit('lock_demo');
SELECT count(*) AS relation_locks_held
  FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
 WHERE l.pid = pg_backend_pid() AND c.relnamespace = 'lock_demo'::regnamespace;
SHOW search_path;
COMMIT;

-- Bad input.
SELECT test.outcome($$SELECT * FROM ck.lock_audit('no_such_schema')$$);

SET client_min_messages = warning;
DROP SCHEMA lock_demo, lock_other CASCADE;
RESET client_min_messages;
