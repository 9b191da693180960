-- concurrency_kit 0.4.0 -> 1.0.0: the API follows one set of rules (README, "Rules of the API").
-- A 0.x call either keeps its meaning or fails loudly (42883, or an error naming the 1.0 call);
-- none runs with its arguments read in a new order. The migration table is in README "Upgrading".
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '1.0.0'" to load this file. \quit

------------------------------------------------------------------------------------------
-- Conditional change and optimistic locking
------------------------------------------------------------------------------------------

-- R1 (table, key, column, ...), R2 (the plain name raises, try_ returns NULL/false), R5 (counters
-- return bigint), R6 (key "any"). Every 0.x function of the family is dropped and the 1.0 one
-- created: the counters' reordered arguments make every 0.x call fail (42883 for an integer,
-- bigint or uuid key; 42703 for a text key read as the column, with a HINT giving the 1.0 order);
-- transition and update_if_version now raise where they returned false / NULL (try_ forms keep
-- that); the _or_raise names are gone (42883).
DROP FUNCTION ck.try_decrement(regclass, name, anyelement, bigint, name);
DROP FUNCTION ck.decrement(regclass, name, anyelement, bigint, name);
DROP FUNCTION ck.try_increment(regclass, name, anyelement, bigint, numeric, name);
DROP FUNCTION ck.increment(regclass, name, anyelement, bigint, numeric, name);
DROP FUNCTION ck.transition(regclass, anyelement, name, text, text, name);
DROP FUNCTION ck.transition_or_raise(regclass, anyelement, name, text, text, name);
DROP FUNCTION ck.update_if_version(regclass, anyelement, bigint, jsonb, name, name);
DROP FUNCTION ck.update_if_version_or_raise(regclass, anyelement, bigint, jsonb, name, name);

CREATE FUNCTION ck.try_decrement(tbl regclass, key "any", col name, amount bigint DEFAULT 1,
                                 key_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_decrement_v1';
COMMENT ON FUNCTION ck.try_decrement(regclass, "any", name, bigint, name) IS
'col := col - amount on the row with that key, only while col >= amount; the new value, or NULL when nothing changed';

CREATE FUNCTION ck.decrement(tbl regclass, key "any", col name, amount bigint DEFAULT 1,
                             key_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_decrement_v1';
COMMENT ON FUNCTION ck.decrement(regclass, "any", name, bigint, name) IS
'like try_decrement, but raises CK001 when col < amount and CK004 when no row has that key';

CREATE FUNCTION ck.try_increment(tbl regclass, key "any", col name, amount bigint DEFAULT 1,
                                 upper_bound bigint DEFAULT NULL, key_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_increment_v1';
COMMENT ON FUNCTION ck.try_increment(regclass, "any", name, bigint, bigint, name) IS
'col := col + amount on the row with that key, only while col + amount <= upper_bound (NULL: the largest value of the column''s type); the new value, or NULL when nothing changed';

CREATE FUNCTION ck.increment(tbl regclass, key "any", col name, amount bigint DEFAULT 1,
                             upper_bound bigint DEFAULT NULL, key_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_increment_v1';
COMMENT ON FUNCTION ck.increment(regclass, "any", name, bigint, bigint, name) IS
'like try_increment, but raises CK002 when the bound would be passed and CK004 when no row has that key';

CREATE FUNCTION ck.try_transition(tbl regclass, key "any", col name, from_value text, to_value text,
                                  key_column name DEFAULT NULL)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_transition';
COMMENT ON FUNCTION ck.try_transition(regclass, "any", name, text, text, name) IS
'SET col = to_value on the row with that key, only while col = from_value; false when the row was not in from_value';

CREATE FUNCTION ck.transition(tbl regclass, key "any", col name, from_value text, to_value text,
                              key_column name DEFAULT NULL)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_transition_v1';
COMMENT ON FUNCTION ck.transition(regclass, "any", name, text, text, name) IS
'like try_transition, but returns true or raises CK003 when the row is in another state and CK004 when no row has that key';

CREATE FUNCTION ck.try_update_if_version(tbl regclass, key "any", version bigint, changes jsonb,
                                         version_col name DEFAULT 'version', key_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_update_if_version';
COMMENT ON FUNCTION ck.try_update_if_version(regclass, "any", bigint, jsonb, name, name) IS
'SET each column of changes (its value cast to the column''s type), version_col = version_col + 1 on the row with that key, only while version_col = version; the new version, or NULL when the row changed since (or does not exist)';

CREATE FUNCTION ck.update_if_version(tbl regclass, key "any", version bigint, changes jsonb,
                                     version_col name DEFAULT 'version', key_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_update_if_version_v1';
COMMENT ON FUNCTION ck.update_if_version(regclass, "any", bigint, jsonb, name, name) IS
'like try_update_if_version, but raises CK006 (stale: sqlstate_action says retry) when the row has another version and CK004 when no row has that key';

------------------------------------------------------------------------------------------
-- Advisory locks and row locks
------------------------------------------------------------------------------------------

-- R8: the lock calls by name take only namespaces created with ck.lock_namespace (42704), the
-- transaction-scoped ones warn outside a transaction block (25P01), keys are bigint (22003
-- outside int4); R6: lock_rows' keys are "any". Same argument order as 0.x, so every 0.x call
-- keeps its meaning, or fails loudly for a name that was never created.
DROP FUNCTION ck.xact_lock(integer, integer, interval);
DROP FUNCTION ck.xact_lock(text, integer, interval);
DROP FUNCTION ck.try_xact_lock(integer, integer);
DROP FUNCTION ck.try_xact_lock(text, integer);
DROP FUNCTION ck.session_lock(integer, integer, interval);
DROP FUNCTION ck.session_lock(text, integer, interval);
DROP FUNCTION ck.session_unlock(integer, integer);
DROP FUNCTION ck.session_unlock(text, integer);
DROP FUNCTION ck.lock_rows(regclass, anyarray, text, interval, name);

COMMENT ON FUNCTION ck.lock_namespace(text) IS
'creates the namespace (idempotent: concurrent first calls agree) and returns its number; the lock calls by name take only names created here';

CREATE FUNCTION ck.xact_lock(ns integer, key bigint DEFAULT 0, timeout interval DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_xact_lock';
COMMENT ON FUNCTION ck.xact_lock(integer, bigint, interval) IS
'transaction-scoped exclusive advisory lock on (ns, key), same key as pg_advisory_xact_lock(ns, key) (key within int4, else 22003); with a timeout, raises 55P03 after waiting that long; WARNING 25P01 outside a transaction block';

CREATE FUNCTION ck.xact_lock(ns text, key bigint DEFAULT 0, timeout interval DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_xact_lock_name';
COMMENT ON FUNCTION ck.xact_lock(text, bigint, interval) IS
'ck.xact_lock by the name of a namespace created with ck.lock_namespace (42704 otherwise)';

CREATE FUNCTION ck.try_xact_lock(ns integer, key bigint DEFAULT 0)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_xact_lock';
COMMENT ON FUNCTION ck.try_xact_lock(integer, bigint) IS
'takes the transaction lock if it is free: true, else false at once; WARNING 25P01 outside a transaction block';

CREATE FUNCTION ck.try_xact_lock(ns text, key bigint DEFAULT 0)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_xact_lock_name';
COMMENT ON FUNCTION ck.try_xact_lock(text, bigint) IS
'ck.try_xact_lock by the name of a namespace created with ck.lock_namespace (42704 otherwise)';

CREATE FUNCTION ck.session_lock(ns integer, key bigint DEFAULT 0, timeout interval DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_session_lock';
COMMENT ON FUNCTION ck.session_lock(integer, bigint, interval) IS
'session-scoped lock, for a dedicated connection only: survives COMMIT and ROLLBACK until ck.session_unlock';

CREATE FUNCTION ck.session_lock(ns text, key bigint DEFAULT 0, timeout interval DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_session_lock_name';
COMMENT ON FUNCTION ck.session_lock(text, bigint, interval) IS
'ck.session_lock by the name of a namespace created with ck.lock_namespace (42704 otherwise)';

CREATE FUNCTION ck.session_unlock(ns integer, key bigint DEFAULT 0)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_session_unlock';
COMMENT ON FUNCTION ck.session_unlock(integer, bigint) IS
'releases one hold of a session lock taken with ck.session_lock; raises 55000 when this session holds none';

CREATE FUNCTION ck.session_unlock(ns text, key bigint DEFAULT 0)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_session_unlock_name';
COMMENT ON FUNCTION ck.session_unlock(text, bigint) IS
'ck.session_unlock by the name of a namespace created with ck.lock_namespace (42704 otherwise)';

CREATE FUNCTION ck.lock_rows(tbl regclass, keys "any", mode text DEFAULT 'no key update',
                             timeout interval DEFAULT NULL, key_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_lock_rows';
COMMENT ON FUNCTION ck.lock_rows(regclass, "any", text, interval, name) IS
'locks the rows with those keys (an array; a literal ''{A1,B2}'' is read as the key column''s array type) in key order (no deadlock between callers), mode no key update (default), update, share or key share; with a timeout 55P03 after at most that long (''0'': at once); how many rows were locked (a key without a row locks nothing); WARNING 25P01 outside a transaction block';

------------------------------------------------------------------------------------------
-- Queues
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Internals: schema ck_internal (trigger functions, Citus plumbing)
------------------------------------------------------------------------------------------
