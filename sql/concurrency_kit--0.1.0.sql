-- concurrency_kit 0.1.0: install script. Every function runs as the caller (SECURITY
-- INVOKER) with a pinned search_path; tables are regclass, columns name.
\echo Use "CREATE EXTENSION concurrency_kit" to load this file. \quit

-- Every function runs with the caller's rights, so using the schema grants nothing more
-- than the caller already has.
GRANT USAGE ON SCHEMA ck TO PUBLIC;

------------------------------------------------------------------------------------------
-- Conditional change: one UPDATE ... WHERE <condition> per call
------------------------------------------------------------------------------------------

CREATE FUNCTION ck.try_decrement(tbl regclass, col name, key anyelement, amount bigint DEFAULT 1,
                                 key_column name DEFAULT NULL)
RETURNS numeric
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'ck_try_decrement';
COMMENT ON FUNCTION ck.try_decrement(regclass, name, anyelement, bigint, name) IS
'col := col - amount on the row with that key, only while col >= amount; the new value, or NULL when nothing changed';

CREATE FUNCTION ck.decrement(tbl regclass, col name, key anyelement, amount bigint DEFAULT 1,
                             key_column name DEFAULT NULL)
RETURNS numeric
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'ck_decrement';
COMMENT ON FUNCTION ck.decrement(regclass, name, anyelement, bigint, name) IS
'like try_decrement, but raises CK001 when col < amount and CK004 when no row has that key';

CREATE FUNCTION ck.try_increment(tbl regclass, col name, key anyelement, amount bigint,
                                 upper_bound numeric, key_column name DEFAULT NULL)
RETURNS numeric
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'ck_try_increment';
COMMENT ON FUNCTION ck.try_increment(regclass, name, anyelement, bigint, numeric, name) IS
'col := col + amount on the row with that key, only while col + amount <= upper_bound; the new value, or NULL when nothing changed';

CREATE FUNCTION ck.increment(tbl regclass, col name, key anyelement, amount bigint,
                             upper_bound numeric, key_column name DEFAULT NULL)
RETURNS numeric
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'ck_increment';
COMMENT ON FUNCTION ck.increment(regclass, name, anyelement, bigint, numeric, name) IS
'like try_increment, but raises CK002 when the bound would be passed and CK004 when no row has that key';

CREATE FUNCTION ck.transition(tbl regclass, key anyelement, col name, from_value text, to_value text,
                              key_column name DEFAULT NULL)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'ck_transition';
COMMENT ON FUNCTION ck.transition(regclass, anyelement, name, text, text, name) IS
'SET col = to_value on the row with that key, only while col = from_value; false when the row was not in from_value';

CREATE FUNCTION ck.transition_or_raise(tbl regclass, key anyelement, col name, from_value text,
                                       to_value text, key_column name DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'ck_transition_or_raise';
COMMENT ON FUNCTION ck.transition_or_raise(regclass, anyelement, name, text, text, name) IS
'like transition, but raises CK003 when the row is in another state and CK004 when no row has that key';

------------------------------------------------------------------------------------------
-- Errors, timeouts, retries
------------------------------------------------------------------------------------------

CREATE FUNCTION ck.sqlstate_action(sqlstate text)
RETURNS text
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'ck_sqlstate_action';
COMMENT ON FUNCTION ck.sqlstate_action(text) IS
'what a client should do with an error: retry (40001, 40P01), busy (55P03), conflict (23505, 23P01, CK001-CK004) or error';
