-- Guards: overlap-guard DDL, the overlap audit, add_overlap_guard, unique guards, and
-- scan_check.
CREATE TABLE rooms_booked (id serial PRIMARY KEY, room int, during int4range);
INSERT INTO rooms_booked (room, during) VALUES
    (1, '[10,20)'), (1, '[15,25)'), (1, '[25,30)'), (2, '[10,20)'), (1, '[5,40)'), (3, NULL), (3, 'empty');

-- the generated DDL: btree_gist for the scalar key, NOT NULL and not-empty on the range
SELECT ck.overlap_guard_ddl('rooms_booked', 'during', '{room}');
SELECT ck.overlap_guard_ddl('rooms_booked', 'during', constraint_name => 'one_booking_at_a_time');

-- the audit: every pair of rows with equal keys whose ranges overlap (NULL and empty
-- ranges overlap nothing)
SELECT a, b, key, a_range, b_range FROM ck.find_overlaps('rooms_booked', 'during', '{room}') ORDER BY a, b;
SELECT count(*) AS pairs_without_key FROM ck.find_overlaps('rooms_booked', 'during');
SELECT count(*) AS first_two FROM ck.find_overlaps('rooms_booked', 'during', max_pairs => 2);

-- add_overlap_guard refuses while rows overlap, naming them, and changes nothing
SELECT test.outcome($$SELECT ck.add_overlap_guard('rooms_booked', 'during', '{room}')$$);
SELECT count(*) AS constraints FROM pg_constraint WHERE conrelid = 'rooms_booked'::regclass AND contype IN ('x', 'c');
-- the user removes the double bookings and the bad rows; the guard goes on
DELETE FROM rooms_booked WHERE id IN (2, 5, 6, 7);
SELECT ck.add_overlap_guard('rooms_booked', 'during', '{room}');
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = 'rooms_booked'::regclass AND contype IN ('x', 'c') ORDER BY conname;
SELECT test.outcome($$INSERT INTO rooms_booked (room, during) VALUES (1, '[12,13)')$$);
SELECT test.outcome($$INSERT INTO rooms_booked (room, during) VALUES (1, 'empty')$$);
SELECT test.outcome($$INSERT INTO rooms_booked (room, during) VALUES (1, NULL)$$);
INSERT INTO rooms_booked (room, during) VALUES (2, '[20,21)'), (1, '[30,31)');
-- the name is taken now: a second guard of that name is refused
SELECT test.outcome($$SELECT ck.overlap_guard_ddl('rooms_booked', 'during', '{room}', 'rooms_booked_during_no_overlap')$$);

-- multiranges, no key, awkward names (quoted, and a default name truncated to 63 bytes)
CREATE TABLE "Odd ""Schedule"" Table With A Very Long Name For Truncation Tests" (
    "Slot Times" int4multirange, "the ""who"" column" text);
INSERT INTO "Odd ""Schedule"" Table With A Very Long Name For Truncation Tests" VALUES
    ('{[1,3), [10,12)}', 'ann'), ('{[4,9)}', 'bob'), ('{[11,15)}', 'ann');
SELECT ck.overlap_guard_ddl('"Odd ""Schedule"" Table With A Very Long Name For Truncation Tests"',
                            'Slot Times', ARRAY['the "who" column']::name[]);
SELECT key, a_range, b_range FROM ck.find_overlaps('"Odd ""Schedule"" Table With A Very Long Name For Truncation Tests"',
                                                  'Slot Times', ARRAY['the "who" column']::name[]);
SELECT ck.overlap_guard_ddl('"Odd ""Schedule"" Table With A Very Long Name For Truncation Tests"', 'Slot Times');

-- unique guards: the predicate is parsed, checked and deparsed, never pasted
CREATE TABLE members (id int PRIMARY KEY, email text, org int, deleted boolean);
SELECT ck.unique_guard_ddl('members', '{email}');
SELECT ck.unique_guard_ddl('members', '{org, email}', 'NOT deleted AND email IS NOT NULL');
SELECT ck.unique_guard_ddl('members', '{email}', 'lower(email) <> ''''');

-- a failed CREATE INDEX CONCURRENTLY (duplicates) leaves an invalid index, which the DDL's IF
-- NOT EXISTS would skip, leaving no guard: the generator refuses until it is dropped; a
-- relation of the guard's name that is no index on the table is refused too
CREATE TABLE handles (id int PRIMARY KEY, handle text);
INSERT INTO handles VALUES (1, 'ann'), (2, 'ann');
SELECT ck.unique_guard_ddl('handles', '{handle}') \gexec
SELECT indisvalid FROM pg_index WHERE indexrelid = 'handles_handle_unique'::regclass;
SELECT test.outcome($$SELECT ck.unique_guard_ddl('handles', '{handle}')$$);
DELETE FROM handles WHERE id = 2;
DROP INDEX CONCURRENTLY handles_handle_unique;
SELECT ck.unique_guard_ddl('handles', '{handle}') \gexec
SELECT indisvalid FROM pg_index WHERE indexrelid = 'handles_handle_unique'::regclass;
SELECT test.outcome($$INSERT INTO handles VALUES (3, 'ann')$$);
SELECT ck.unique_guard_ddl('handles', '{handle}') \gexec
CREATE VIEW handles_id_handle_unique AS SELECT 1 AS one;
SELECT test.outcome($$SELECT ck.unique_guard_ddl('handles', '{id, handle}')$$);
DROP VIEW handles_id_handle_unique;
DROP TABLE handles;

-- scan_check: each sequential scan, with advice; the statement is never run
INSERT INTO members SELECT g, 'm' || g || '@example.com', g % 10, false FROM generate_series(1, 2000) g;
ANALYZE members;
SELECT node, relation, advice FROM ck.scan_check('SELECT * FROM members WHERE org = 3');
SELECT count(*) AS seq_scans FROM ck.scan_check('SELECT * FROM members WHERE id = 3');
SELECT count(*) AS seq_scans FROM ck.scan_check('DELETE FROM members WHERE email = ''x''');
SELECT count(*) AS still_there FROM members;

-- bad input: a clear error with a fitting SQLSTATE, and nothing changed
SELECT statement, test.outcome(statement) FROM (VALUES
    ($s$SELECT ck.overlap_guard_ddl('rooms_booked', 'room')$s$),
    ($s$SELECT ck.overlap_guard_ddl('rooms_booked', 'missing')$s$),
    ($s$SELECT ck.overlap_guard_ddl('rooms_booked', 'during', '{missing}')$s$),
    ($s$SELECT ck.overlap_guard_ddl('rooms_booked', 'during', '{room, room}')$s$),
    ($s$SELECT ck.overlap_guard_ddl('rooms_booked', 'during', '{during}')$s$),
    ($s$SELECT ck.overlap_guard_ddl('rooms_booked', 'during', NULL)$s$),
    ($s$SELECT ck.overlap_guard_ddl('rooms_booked', 'during', '{NULL}')$s$),
    ($s$SELECT ck.overlap_guard_ddl('rooms_booked', 'during; DROP TABLE rooms_booked')$s$),
    ($s$SELECT ck.overlap_guard_ddl(NULL, 'during')$s$),
    ($s$SELECT * FROM ck.find_overlaps('rooms_booked', 'during', max_pairs => 0)$s$),
    ($s$SELECT * FROM ck.find_overlaps('rooms_booked', 'room')$s$),
    ($s$SELECT ck.unique_guard_ddl('members', '{}')$s$),
    ($s$SELECT ck.unique_guard_ddl('members', '{missing}')$s$),
    ($s$SELECT ck.unique_guard_ddl('members', '{email, email}')$s$),
    ($s$SELECT ck.unique_guard_ddl('members', '{email}', 'deleted = false); DROP TABLE members; --')$s$),
    ($s$SELECT ck.unique_guard_ddl('members', '{email}', 'true; DROP TABLE members')$s$),
    ($s$SELECT ck.unique_guard_ddl('members', '{email}', 'org')$s$),
    ($s$SELECT ck.unique_guard_ddl('members', '{email}', 'missing = 1')$s$),
    ($s$SELECT ck.unique_guard_ddl('members', '{email}', 'now() > ''2020-01-01''')$s$),
    ($s$SELECT ck.unique_guard_ddl('members', '{email}', 'id IN (SELECT 1)')$s$),
    ($s$SELECT * FROM ck.scan_check('SELECT 1; DELETE FROM members')$s$),
    ($s$SELECT * FROM ck.scan_check('VACUUM members')$s$),
    ($s$SELECT * FROM ck.scan_check('EXPLAIN ANALYZE DELETE FROM members')$s$),
    ($s$SELECT * FROM ck.scan_check(NULL)$s$),
    ($s$SELECT * FROM ck.scan_check('SELECT FROM no_such_table')$s$)
) AS bad(statement);
SELECT count(*) AS members_still_there FROM members;
