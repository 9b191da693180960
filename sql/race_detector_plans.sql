-- ck.race_detector: the setting, which UPDATE statements get the check (EXPLAIN shows it as a
-- filter on the target's scans), the reports' functions, their labels and privileges. Lost
-- updates take two sessions: test/specs/race_detector.spec.
LOAD 'concurrency_kit';
SHOW ck.race_detector;
SELECT test.outcome($$SET ck.race_detector = 'loud'$$);
-- The prefix ck. belongs to the library: a misspelt setting is an error, not a silent placeholder.
SELECT test.outcome($$SET ck.race_detectr = 'warning'$$);

CREATE TABLE rd_stock (id int PRIMARY KEY, sku text UNIQUE, qty int NOT NULL, note text,
                       version bigint NOT NULL DEFAULT 0);
CREATE TABLE rd_log (id int PRIMARY KEY, stock_id int, qty int);
INSERT INTO rd_stock VALUES (1, 'a', 10), (2, 'b', 10);

-- Whether the plan of stmt checks its rows: the scans checked and the columns they name.
CREATE FUNCTION rd_checked(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
    scans int := 0;
    columns text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
        IF line ~ 'race_check' THEN
            scans := scans + 1;
            columns := substring(line FROM '''([^'']*)''::text\)$');
        END IF;
    END LOOP;
    RETURN CASE WHEN scans = 0 THEN 'not checked' ELSE scans || ' scan(s) checked, overwriting ' || columns END;
END $$;

-- Off (the default): no plan is checked.
SELECT rd_checked('UPDATE rd_stock SET qty = 9 WHERE id = 1');
SET ck.race_detector = 'warning';
-- Overwrites found by a key, by another unique key, or with no WHERE at all: checked.
SELECT rd_checked('UPDATE rd_stock SET qty = 9 WHERE id = 1');
SELECT rd_checked($$UPDATE rd_stock SET qty = 9, note = 'x' WHERE sku = 'a'$$);
SELECT rd_checked('UPDATE rd_stock SET qty = 0');
-- One column overwritten, one computed: checked, naming the overwritten one.
SELECT rd_checked('UPDATE rd_stock SET qty = 9, version = version + 1 WHERE id = 1');
-- A value made in the statement alone (now(), a sequence) carries nothing read: not an overwrite.
SELECT rd_checked('UPDATE rd_stock SET note = now()::text WHERE id = 1');
SELECT rd_checked('UPDATE rd_stock SET qty = 9, note = now()::text WHERE id = 1');
-- A value read from another table in the statement is not the application's: not checked (one
-- of the detector's blind spots, with UPDATE ... FROM).
SELECT rd_checked('UPDATE rd_stock SET qty = (SELECT max(qty) FROM rd_log) WHERE id = 1');
-- Computed from the row (also through a sub-select of it): not checked.
SELECT rd_checked('UPDATE rd_stock SET qty = qty - 1 WHERE id = 1');
SELECT rd_checked('UPDATE rd_stock s SET qty = (SELECT s.qty * 2) WHERE id = 1');
-- Guarded by a non-key column in the WHERE (a version, the value read): not checked.
SELECT rd_checked('UPDATE rd_stock SET qty = 9, version = version + 1 WHERE id = 1 AND version = 0');
SELECT rd_checked('UPDATE rd_stock SET qty = 9 WHERE id = 1 AND qty = 10');
-- With FROM: the new values come from a join; not checked.
SELECT rd_checked('UPDATE rd_stock s SET qty = l.qty FROM rd_log l WHERE l.stock_id = s.id');
-- A partitioned table: each partition's scan.
CREATE TABLE rd_part (id int, region int, qty int, PRIMARY KEY (region, id)) PARTITION BY LIST (region);
CREATE TABLE rd_part_1 PARTITION OF rd_part FOR VALUES IN (1);
CREATE TABLE rd_part_2 PARTITION OF rd_part FOR VALUES IN (2);
SELECT rd_checked('UPDATE rd_part SET qty = 5 WHERE id = 1');
SELECT rd_checked('UPDATE rd_part SET qty = 5 WHERE region = 2 AND id = 1');

-- A statement prepared while off is planned again when the detector is turned on, and back.
SET ck.race_detector = 'off';
PREPARE rd_set(int) AS UPDATE rd_stock SET qty = $1 WHERE id = 1;
SELECT rd_checked('EXECUTE rd_set(3)');
SET ck.race_detector = 'error';
SELECT rd_checked('EXECUTE rd_set(3)');
SET ck.race_detector = 'off';
SELECT rd_checked('EXECUTE rd_set(3)');
DEALLOCATE rd_set;
SET ck.race_detector = 'error';

-- Alone, nothing is lost: a read and an overwrite in one transaction run.
BEGIN;
SELECT qty FROM rd_stock WHERE id = 1;
UPDATE rd_stock SET qty = 9 WHERE id = 1;
COMMIT;
SELECT qty FROM rd_stock WHERE id = 1;

-- The check called by hand knows no read of this transaction: it lets the row through, NULLs too.
SELECT ck_internal.race_check('rd_stock', '1', '(0,1)', 'x', 'y') AS checked,
       ck_internal.race_check(NULL, NULL, NULL, NULL, NULL) AS with_nulls;
-- After a read, a hand-made call with a transaction id not yet begun is a report; its tid names
-- no page of the table, which is neither read nor extended (the key is the tid).
SELECT pg_relation_size('rd_stock') AS size_before \gset
BEGIN;
SELECT count(*) FROM rd_stock;
DO $$
BEGIN
    PERFORM ck_internal.race_check('rd_stock', (pg_current_xact_id()::text::bigint % 4294967296 + 1000)::text::xid,
                                   '(4294967295,1)', 'w', 'qty');
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE '%: %', SQLSTATE, SQLERRM;   -- the detail names the transaction id, which varies
END $$;
ROLLBACK;
SELECT pg_relation_size('rd_stock') = :size_before AS same_size;

-- Reports: anyone reads them (statements only of roles they may see); only superusers reset.
CREATE ROLE rd_user;
GRANT USAGE ON SCHEMA test TO rd_user;
SET ROLE rd_user;
SELECT count(*) >= 0 AS readable FROM ck.race_reports();
SELECT test.outcome('SELECT ck.race_reports_reset()');
RESET ROLE;
REVOKE USAGE ON SCHEMA test FROM rd_user;
DROP ROLE rd_user;
SELECT ck.race_reports_reset() >= 0 AS reset;
SELECT count(*) AS reports_after_reset FROM ck.race_reports();

-- Labels.
SELECT p.oid::regprocedure, p.provolatile, p.proparallel, p.prosecdef, p.proconfig, p.proisstrict
FROM pg_proc AS p
WHERE p.oid IN ('ck.race_reports'::regproc, 'ck.race_reports_reset'::regproc, 'ck_internal.race_check'::regproc)
ORDER BY 1::text;

RESET ck.race_detector;
DROP FUNCTION rd_checked(text);
DROP TABLE rd_stock, rd_log, rd_part;
