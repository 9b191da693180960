-- concurrency_kit 0.3.0 -> 0.3.1: job dependencies (ck.enqueue(..., after)), optimistic versioned
-- updates and row locks taken in key order (ck.update_if_version, ck.version_guard_ddl,
-- ck.lock_rows, ck.lock_audit).
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.3.1'" to load this file. \quit

-- Optimistic versioned updates, version guard, row locks (issue 24)

CREATE FUNCTION ck.update_if_version(tbl regclass, key anyelement, version bigint, changes jsonb,
                                     version_col name DEFAULT 'version', key_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_update_if_version';
COMMENT ON FUNCTION ck.update_if_version(regclass, anyelement, bigint, jsonb, name, name) IS
'SET each column of changes (its value cast to the column''s type), version_col = version_col + 1 on the row with that key, only while version_col = version; the new version, or NULL when the row changed since (or does not exist)';

CREATE FUNCTION ck.update_if_version_or_raise(tbl regclass, key anyelement, version bigint, changes jsonb,
                                              version_col name DEFAULT 'version', key_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_update_if_version_or_raise';
COMMENT ON FUNCTION ck.update_if_version_or_raise(regclass, anyelement, bigint, jsonb, name, name) IS
'like update_if_version, but raises CK006 (stale: sqlstate_action says retry) when the row has another version and CK004 when no row has that key';

CREATE FUNCTION ck.version_guard()
RETURNS trigger
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_version_guard';
COMMENT ON FUNCTION ck.version_guard() IS
'BEFORE UPDATE row trigger (argument: the version column): bumps the version when the UPDATE left it as it was, keeps a higher one, refuses a lower one or NULL (23514)';

CREATE FUNCTION ck.version_guard_ddl(tbl regclass, version_col name DEFAULT 'version')
RETURNS text
LANGUAGE c STABLE PARALLEL SAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_version_guard_ddl';
COMMENT ON FUNCTION ck.version_guard_ddl(regclass, name) IS
'CREATE OR REPLACE TRIGGER running ck.version_guard on every UPDATE of tbl, so writers that bypass ck.update_if_version still bump the version';

CREATE FUNCTION ck.add_version_guard(tbl regclass, version_col name DEFAULT 'version')
RETURNS text
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_add_version_guard';
COMMENT ON FUNCTION ck.add_version_guard(regclass, name) IS
'runs the DDL of ck.version_guard_ddl and returns it';

CREATE FUNCTION ck.lock_rows(tbl regclass, keys anyarray, mode text DEFAULT 'no key update',
                             timeout interval DEFAULT NULL, key_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_lock_rows';
COMMENT ON FUNCTION ck.lock_rows(regclass, anyarray, text, interval, name) IS
'locks the rows with those keys in key order (no deadlock between callers), mode no key update (default), update, share or key share; with a timeout 55P03 after at most that long (''0'': at once); how many rows were locked (a key without a row locks nothing)';

COMMENT ON FUNCTION ck.sqlstate_action(text) IS
'what a client should do with an error: retry (40001, 40P01, CK006), busy (55P03), conflict (23505, 23P01, CK001-CK005) or error';
