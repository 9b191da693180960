-- Optimistic versioned updates: ck.try_update_if_version (NULL when stale) and ck.update_if_version,
-- which raises.
CREATE TYPE mood AS ENUM ('calm', 'busy');
CREATE TABLE docs (id int PRIMARY KEY, title text NOT NULL, body varchar(8), qty int, tags text[],
                   meta jsonb, m mood, version bigint NOT NULL DEFAULT 1,
                   len int GENERATED ALWAYS AS (length(title)) STORED);
INSERT INTO docs (id, title) VALUES (1, 'one'), (2, 'two');

-- the new version when the row still has the version read; the change and the bump are one UPDATE
SELECT ck.try_update_if_version('docs', 1, 1, '{"title": "uno", "qty": 5}');
SELECT id, title, qty, version, len FROM docs ORDER BY id;
-- the same version again: stale, NULL, nothing changed
SELECT ck.try_update_if_version('docs', 1, 1, '{"title": "lost"}');
SELECT ck.try_update_if_version('docs', 999, 1, '{"title": "x"}') IS NULL AS no_row_is_null;
SELECT id, title, version FROM docs WHERE id = 1;

-- values: cast to each column's type (enum, array in its text form, jsonb as JSON, NULL);
-- an empty object only bumps the version
SELECT ck.try_update_if_version('docs', 1, 2, '{"m": "busy", "tags": "{a,b}", "meta": {"k": [1, 2]}, "body": null}');
SELECT m, tags, meta, body, version FROM docs WHERE id = 1;
SELECT ck.try_update_if_version('docs', 1, 3, '{}');

-- the raising form: CK006 (stale, with both versions), CK004 (no row), and classified
SELECT test.outcome($$SELECT ck.update_if_version('docs', 1, 2, '{"qty": 1}')$$);
SELECT test.outcome($$SELECT ck.update_if_version('docs', 7, 2, '{"qty": 1}')$$);
SELECT ck.update_if_version('docs', 1, 4, '{"qty": 1}');
SELECT ck.sqlstate_action('CK006');

-- another version column, a smallint one, and a key column of its own
CREATE TABLE items (sku text UNIQUE NOT NULL, id int PRIMARY KEY, price numeric, rev smallint NOT NULL DEFAULT 0);
INSERT INTO items VALUES ('A-1', 1, 9.5, 0);
SELECT ck.try_update_if_version('items', 'A-1'::text, 0, '{"price": 10}', 'rev', 'sku');
SELECT ck.try_update_if_version('items', 1, 1, '{"price": "11.25"}', version_col => 'rev');
SELECT * FROM items;
-- a text key needs no cast, for a text or an integer key column alike
SELECT ck.update_if_version('items', 'A-1', 2, '{"price": 12}', 'rev', 'sku');
SELECT ck.try_update_if_version('items', '1', 3, '{"price": 13}', 'rev');
SELECT test.outcome($$SELECT ck.update_if_version('items', 'B-2', 4, '{}', 'rev', 'sku')$$);
SELECT * FROM items;
-- the 0.x names: update_if_version_or_raise is gone (42883)
SELECT test.outcome($$SELECT ck.update_if_version_or_raise('items', 1, 4, '{}', 'rev')$$);

-- bad input: clear errors, nothing changed
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"nope": 1}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"id": 3}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"version": 9}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"len": 9}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"ctid": "(0,1)"}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '[1]')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '"title"')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"qty": "many"}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"body": "far too long"}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"m": "angry"}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"title": null}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"title": "t"}', 'title')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"title": "t"}', 'nope')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('items', 1, 1, '{"price": 1}', 'id')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{"title": "t"}', key_column => 'title')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 'two'::text, 1, '{"title": "t"}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version(NULL, 2, 1, '{}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', NULL::int, 1, '{}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, NULL, '{}')$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, NULL)$$);
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 1, '{}', NULL)$$);
SELECT title, version FROM docs WHERE id = 2;

-- a hostile column name is quoted, in the SET list and in the JSON key alike
CREATE TABLE "we""ird" ("k""ey" int PRIMARY KEY, "va'l; drop" text, "v e r" int NOT NULL DEFAULT 0);
INSERT INTO "we""ird" VALUES (1, 'x', 0);
SELECT ck.try_update_if_version('"we""ird"', 1, 0, '{"va''l; drop": "y\\z"}', 'v e r');
SELECT * FROM "we""ird";

-- one plan per table and set of columns: a new set is prepared, an old one reused, and a
-- column dropped invalidates the plan (the next call names the missing column)
SELECT ck.try_update_if_version('docs', 2, 1, '{"qty": 1}'), ck.try_update_if_version('docs', 2, 2, '{"title": "t2"}'),
       ck.try_update_if_version('docs', 2, 3, '{"qty": 2}');
ALTER TABLE docs DROP COLUMN qty;
SELECT test.outcome($$SELECT ck.try_update_if_version('docs', 2, 4, '{"qty": 3}')$$);
SELECT ck.try_update_if_version('docs', 2, 4, '{"title": "t3"}');

-- the version guard: plain UPDATEs bump the version; a higher one is kept, a lower one or NULL refused
SELECT ck.version_guard_ddl('docs');
SELECT ck.add_version_guard('docs') = ck.version_guard_ddl('docs') AS ran_what_it_returns;
UPDATE docs SET title = 'plain' WHERE id = 2 RETURNING version;
SELECT ck.try_update_if_version('docs', 2, 5, '{"title": "t4"}') AS stale_after_plain_update;
SELECT ck.try_update_if_version('docs', 2, 6, '{"title": "t4"}') AS bumped_once_not_twice;
UPDATE docs SET version = 100 WHERE id = 2 RETURNING version;
SELECT test.outcome($$UPDATE docs SET version = 3 WHERE id = 2$$);
SELECT test.outcome($$ALTER TABLE docs ALTER version DROP NOT NULL; UPDATE docs SET version = NULL WHERE id = 2$$);
UPDATE items SET price = 1;
SELECT ck.add_version_guard('items', 'rev');
UPDATE items SET price = 2 RETURNING rev;
SELECT test.outcome($$SELECT ck.version_guard_ddl('docs', 'title')$$);
SELECT test.outcome($$SELECT ck.version_guard_ddl('docs', 'nope')$$);
SELECT test.outcome($$SELECT ck.version_guard_ddl(NULL)$$);
SELECT test.outcome($$SELECT ck_internal.version_guard()$$);
SELECT ck.version_guard_ddl('"we""ird"', 'v e r');
