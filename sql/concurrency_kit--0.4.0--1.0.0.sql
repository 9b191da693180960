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

-- The result column attempt is attempts, as the table names it (R5): a new result type, so
-- drop and create. claim_wait takes claim's defaults (R4).
DROP FUNCTION ck.claim(regclass, integer, interval);
DROP FUNCTION ck.claim_wait(regclass, integer, interval, interval);
DROP FUNCTION ck.complete_and_claim(regclass, bigint, bigint, integer, interval);
CREATE FUNCTION ck.claim(queue regclass, batch integer DEFAULT 1, lease interval DEFAULT NULL)
RETURNS TABLE (id bigint, lease_token bigint, attempts integer, payload jsonb, lease_until timestamptz)
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1
AS 'MODULE_PATHNAME', 'ck_claim';
COMMENT ON FUNCTION ck.claim(regclass, integer, interval) IS
'one statement with FOR UPDATE SKIP LOCKED: leases up to batch ready jobs (by priority, run_at, id), each with a new lease token';

CREATE FUNCTION ck.claim_wait(queue regclass, batch integer DEFAULT 1, lease interval DEFAULT NULL,
                              max_wait interval DEFAULT '10 seconds')
RETURNS TABLE (id bigint, lease_token bigint, attempts integer, payload jsonb, lease_until timestamptz)
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1
AS 'MODULE_PATHNAME', 'ck_claim_wait';
COMMENT ON FUNCTION ck.claim_wait(regclass, integer, interval, interval) IS
'like claim, but waits up to max_wait for jobs: woken by the commit that makes jobs ready when the library is preloaded, else looking again every 10 to 200 ms; also wakes when a scheduled job or a lease end comes due';

CREATE FUNCTION ck.complete_and_claim(queue regclass, id bigint, lease_token bigint, batch integer DEFAULT 1,
                                      lease interval DEFAULT NULL)
RETURNS TABLE (id bigint, lease_token bigint, attempts integer, payload jsonb, lease_until timestamptz)
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1
AS 'MODULE_PATHNAME', 'ck_complete_and_claim';
COMMENT ON FUNCTION ck.complete_and_claim(regclass, bigint, bigint, integer, interval) IS
'a worker''s loop in one call: completes the job held (raising CK005 when the lease was lost, so the job''s effects roll back) and claims up to batch more, like ck.claim';

-- The payload of enqueue_unique has no default (R1): a 0.x call with the key and no payload, or
-- with the payload in the key's place and no other argument, gets 42883 instead of storing the
-- payload as the key.
DROP FUNCTION ck.enqueue_unique(regclass, text, jsonb, timestamptz, integer, interval, text);
CREATE FUNCTION ck.enqueue_unique(queue regclass, unique_key text, payload jsonb,
                                  run_at timestamptz DEFAULT now(), priority integer DEFAULT 0,
                                  unique_for interval DEFAULT NULL, concurrency_key text DEFAULT NULL,
                                  OUT id bigint, OUT inserted boolean)
RETURNS record
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_enqueue_unique';
COMMENT ON FUNCTION ck.enqueue_unique(regclass, text, jsonb, timestamptz, integer, interval, text) IS
'ck.enqueue with a unique key, telling whether it inserted: the job''s id, and false when a job with that key (waiting, scheduled or running) was already in the queue, or took the key''s unique_for window';

-- A lost lease raises CK005 in every plain acknowledgement (R3); the 0.x meanings (false, 'lost',
-- NULL, the ids still held) are the try_ forms'. The C functions behind complete, fail,
-- extend_lease and complete_many raise from 1.0 on: a 0.x caller that finds the lease lost gets
-- CK005 instead of a failure value it might not test.
COMMENT ON FUNCTION ck.complete(regclass, bigint, bigint) IS
'deletes a finished job if the lease token is still current: true; raises CK005 when the lease was lost (ck.try_complete returns false instead)';
COMMENT ON FUNCTION ck.fail(regclass, bigint, bigint, text, interval) IS
'retry (ready again after retry_in or a jittered exponential backoff) or dead (attempts exhausted: moved to dead letters); raises CK005 when the lease was lost (ck.try_fail returns NULL instead)';
COMMENT ON FUNCTION ck.extend_lease(regclass, bigint, bigint, interval) IS
'heartbeat: the new lease end (now() + lease); raises CK005 when the lease was lost (ck.try_extend_lease returns NULL instead)';
COMMENT ON FUNCTION ck.complete_many(regclass, bigint[], bigint[]) IS
'ck.complete for the jobs of a batch claim in one statement: ids[i] with lease_tokens[i]; returns every id, or raises CK005 naming a pair whose lease was lost (nothing completed)';

CREATE FUNCTION ck.try_complete(queue regclass, id bigint, lease_token bigint)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_complete';
COMMENT ON FUNCTION ck.try_complete(regclass, bigint, bigint) IS
'deletes a finished job if the lease token is still current: true; false when the lease was lost';

CREATE FUNCTION ck.try_complete_many(queue regclass, ids bigint[], lease_tokens bigint[])
RETURNS SETOF bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_complete_many';
COMMENT ON FUNCTION ck.try_complete_many(regclass, bigint[], bigint[]) IS
'ck.try_complete for the jobs of a batch claim in one statement: returns the ids that were still yours and are done (the others are left alone)';

CREATE FUNCTION ck.try_fail(queue regclass, id bigint, lease_token bigint, error text DEFAULT NULL,
                            retry_in interval DEFAULT NULL)
RETURNS text
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_fail';
COMMENT ON FUNCTION ck.try_fail(regclass, bigint, bigint, text, interval) IS
'retry or dead, as ck.fail; NULL when the lease was lost';

CREATE FUNCTION ck.try_extend_lease(queue regclass, id bigint, lease_token bigint, lease interval)
RETURNS timestamptz
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_extend_lease';
COMMENT ON FUNCTION ck.try_extend_lease(regclass, bigint, bigint, interval) IS
'heartbeat: the new lease end (now() + lease), or NULL when the lease was lost';

-- After DROP EXTENSION concurrency_kit CASCADE and CREATE EXTENSION, queue tables survive
-- without their registration, triggers and everything kept in ck's tables.
CREATE FUNCTION ck.adopt_queue(queue regclass, lease interval DEFAULT '30 seconds', max_attempts integer DEFAULT 5,
                               notify boolean DEFAULT false)
RETURNS regclass
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_adopt_queue';
COMMENT ON FUNCTION ck.adopt_queue(regclass, interval, integer, boolean) IS
'takes back a queue table that lost its registration (DROP EXTENSION ... CASCADE, CREATE EXTENSION): checks its columns, finds or makes its dead-letter table, makes its missing indexes and triggers, registers it; leases held then are lost, parked jobs are ready, jobs waiting for dependencies are dead letters';


------------------------------------------------------------------------------------------
-- Internals: schema ck_internal (trigger functions, Citus plumbing)
------------------------------------------------------------------------------------------

CREATE SCHEMA ck_internal;
GRANT USAGE ON SCHEMA ck_internal TO PUBLIC;
-- SET SCHEMA keeps each function's OID: the triggers of existing queues (and of version guards),
-- and the SQL bodies that call them, keep working.
ALTER FUNCTION ck.queues_changed() SET SCHEMA ck_internal;
ALTER FUNCTION ck.notify_queue() SET SCHEMA ck_internal;
ALTER FUNCTION ck.queue_ready() SET SCHEMA ck_internal;
ALTER FUNCTION ck.queue_changed() SET SCHEMA ck_internal;
ALTER FUNCTION ck.queue_left() SET SCHEMA ck_internal;
ALTER FUNCTION ck.queue_dependency_left() SET SCHEMA ck_internal;
ALTER FUNCTION ck.version_guard() SET SCHEMA ck_internal;
ALTER FUNCTION ck.attach_queue_shard(regclass, regclass, integer, integer, integer, bigint, interval, integer) SET SCHEMA ck_internal;
ALTER FUNCTION ck.register_distributed_queue(text, integer[], text[]) SET SCHEMA ck_internal;
ALTER FUNCTION ck.detach_queue_shard(regclass) SET SCHEMA ck_internal;
ALTER FUNCTION ck.session_locks_held() SET SCHEMA ck_internal;
ALTER FUNCTION ck.claim_frontier(regclass) SET SCHEMA ck_internal;
-- The PL/pgSQL functions that name the moved ones in their bodies (set_concurrency_limit makes
-- ck_left, drop_queue and distribute_queue run the Citus plumbing) and attach_queue_shard's trigger DDL.
CREATE OR REPLACE FUNCTION ck.set_concurrency_limit(queue regclass, concurrency_key text, max_running integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
DECLARE
    queue_name pg_catalog.text := (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, queue, 0)).identity;
    k pg_catalog.text;
    lim pg_catalog.int4;
    unparked pg_catalog.int8;
    moved pg_catalog.int8;
    keys pg_catalog.text[];
    shard_row record;
    distributed boolean := false;
BEGIN
    IF queue IS NULL THEN
        RAISE EXCEPTION 'queue must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) queue) THEN
        RAISE EXCEPTION 'relation with OID % does not exist', queue::pg_catalog.oid USING ERRCODE = 'undefined_table';
    END IF;
    IF max_running OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'max_running must be zero or positive, got %', max_running USING ERRCODE = 'invalid_parameter_value',
            HINT = 'NULL removes the limit; 0 holds every job of the key back.';
    END IF;
    IF NOT EXISTS (SELECT FROM ck.queues AS r WHERE r.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue) THEN
        RAISE EXCEPTION 'table % is not a queue', queue_name USING ERRCODE = 'wrong_object_type',
            HINT = 'Create queues with ck.create_queue().';
    END IF;
    IF NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class AS c
                                   WHERE c.oid OPERATOR(pg_catalog.=) queue), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', queue_name USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- A distributed queue (0.3.2): every shard keeps the limit, on its worker; a key's jobs are
    -- all on the shard its hash names, so each shard's count is the queue's.
    FOR shard_row IN SELECT p.part, p.shard FROM ck.distributed_queues AS q,
             LATERAL ROWS FROM (pg_catalog.unnest(q.parts), pg_catalog.unnest(q.shards)) AS p(part, shard)
             WHERE q.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue LOOP
        EXECUTE pg_catalog.format('SELECT ck.set_concurrency_limit($2::pg_catalog.regclass, $3, $4) FROM (SELECT pg_catalog.count(*)'
                                  ' FROM %s WHERE part OPERATOR(pg_catalog.=) $1 AND id OPERATOR(pg_catalog.=) 0) AS s', queue_name)
            USING shard_row.part, shard_row.shard, concurrency_key, max_running;
        distributed := true;
    END LOOP;
    IF distributed THEN
        RETURN;
    END IF;
    IF max_running IS NULL THEN
        DELETE FROM ck.concurrency_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue
            AND (l.concurrency_key OPERATOR(pg_catalog.=) set_concurrency_limit.concurrency_key
                 OR (l.concurrency_key IS NULL AND set_concurrency_limit.concurrency_key IS NULL));
    ELSE
        INSERT INTO ck.concurrency_limits AS l VALUES (queue, concurrency_key, max_running)
            ON CONFLICT ON CONSTRAINT concurrency_limits_key DO UPDATE SET max_running = EXCLUDED.max_running;
    END IF;
    -- The trigger that hands a departing job's slot on comes with the queue's first limit (a
    -- queue without limits pays nothing for it) and stays.
    IF max_running IS NOT NULL AND NOT EXISTS (
            SELECT FROM pg_catalog.pg_trigger AS t WHERE t.tgrelid OPERATOR(pg_catalog.=) queue
                                                     AND t.tgname OPERATOR(pg_catalog.=) 'ck_left') THEN
        EXECUTE pg_catalog.format('CREATE TRIGGER ck_left AFTER DELETE ON %s REFERENCING OLD TABLE AS ck_old'
                                  ' FOR EACH STATEMENT EXECUTE FUNCTION ck_internal.queue_left()', queue_name);
    END IF;
    -- The keys it settles: the one named, or every key without a limit of its own; one limit
    -- holds for all of them.
    EXECUTE pg_catalog.format(
        'SELECT pg_catalog.array_agg(u.k ORDER BY u.k) FROM ('
        ' SELECT DISTINCT j.concurrency_key FROM %s AS j WHERE j.concurrency_key IS NOT NULL'
        '   AND ($1 IS NULL OR j.concurrency_key OPERATOR(pg_catalog.=) $1)'
        ' UNION SELECT s.concurrency_key FROM ck.concurrency_slots AS s WHERE s.queue OPERATOR(pg_catalog.=) $2'
        '   AND ($1 IS NULL OR s.concurrency_key OPERATOR(pg_catalog.=) $1)) AS u(k)'
        ' WHERE $1 IS NOT NULL OR NOT EXISTS (SELECT FROM ck.concurrency_limits AS l'
        '   WHERE l.queue OPERATOR(pg_catalog.=) $2 AND l.concurrency_key OPERATOR(pg_catalog.=) u.k)', queue_name)
        INTO keys USING concurrency_key, queue;
    IF keys IS NULL THEN
        RETURN;
    END IF;
    lim := (SELECT l.max_running FROM ck.concurrency_limits AS l
            WHERE l.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue
              AND (l.concurrency_key OPERATOR(pg_catalog.=) set_concurrency_limit.concurrency_key OR l.concurrency_key IS NULL)
            ORDER BY l.concurrency_key IS NULL LIMIT 1);
    -- Their slot rows, locked in key order before anything is counted: enqueues and departures
    -- of these keys wait until this commits.
    INSERT INTO ck.concurrency_slots AS s SELECT queue, u.k, 0 FROM pg_catalog.unnest(keys) AS u(k) ORDER BY u.k
        ON CONFLICT ON CONSTRAINT concurrency_slots_pkey DO UPDATE SET free = s.free;
    IF lim IS NULL THEN
        EXECUTE pg_catalog.format('UPDATE %s AS j SET run_at = GREATEST(j.parked_run_at, pg_catalog.clock_timestamp()), parked_run_at = NULL'
                                  ' WHERE j.concurrency_key OPERATOR(pg_catalog.=) ANY ($1) AND j.parked_run_at IS NOT NULL AND j.waiting_for IS NULL',
                                  queue_name) USING keys;
        DELETE FROM ck.concurrency_slots AS s WHERE s.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue
            AND s.concurrency_key OPERATOR(pg_catalog.=) ANY (keys);
        RETURN;
    END IF;
    -- The jobs of each key not parked, counted in one pass over the queue (a count per key read
    -- the whole queue once a key); then each key with room unparks its first parked jobs.
    FOR k, unparked IN EXECUTE pg_catalog.format(
        'SELECT u.k, pg_catalog.count(j.id) FROM pg_catalog.unnest($1) AS u(k)'
        ' LEFT JOIN %s AS j ON j.concurrency_key OPERATOR(pg_catalog.=) u.k AND j.parked_run_at IS NULL'
        ' GROUP BY u.k', queue_name) USING keys
    LOOP
        moved := 0;
        IF lim OPERATOR(pg_catalog.>) unparked THEN
            EXECUTE pg_catalog.format('WITH pick AS (SELECT p.id FROM %1$s AS p WHERE p.concurrency_key OPERATOR(pg_catalog.=) $1'
                                      '   AND p.parked_run_at IS NOT NULL AND p.waiting_for IS NULL ORDER BY p.priority, p.parked_run_at, p.id LIMIT $2 FOR UPDATE)'
                                      ' UPDATE %1$s AS j SET run_at = GREATEST(j.parked_run_at, pg_catalog.clock_timestamp()), parked_run_at = NULL FROM pick'
                                      ' WHERE j.id OPERATOR(pg_catalog.=) pick.id', queue_name)
                USING k, lim OPERATOR(pg_catalog.-) unparked;
            GET DIAGNOSTICS moved = ROW_COUNT;
        END IF;
        UPDATE ck.concurrency_slots AS s SET free = (lim OPERATOR(pg_catalog.-) unparked OPERATOR(pg_catalog.-) moved)::pg_catalog.int4
            WHERE s.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue AND s.concurrency_key OPERATOR(pg_catalog.=) k;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ck.set_concurrency_limit(regclass, text, integer) IS
'at most max_running jobs of the concurrency key are ready or leased at once (the others wait, parked, and move up as jobs of the key leave the queue); a NULL key sets the default for every key without a limit of its own; NULL max_running removes the limit';

CREATE OR REPLACE FUNCTION ck.drop_queue(queue regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
DECLARE
    -- Names schema-qualified from the OIDs, whatever the caller's search_path.
    -- (Type names too: PL/pgSQL resolves them with the caller's search_path.)
    queue_name pg_catalog.text := (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, queue, 0)).identity;
    dead pg_catalog.regclass;
    shard_row record;
BEGIN
    IF queue IS NULL THEN
        RAISE EXCEPTION 'queue must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- Everyone may read ck.queues; only the owner of a queue may delete its row (row-level
    -- security), and DROP TABLE asks the same: a non-owner gets 42501, not "not a queue".
    SELECT q.dead_letters INTO dead FROM ck.queues AS q WHERE q.queue OPERATOR(pg_catalog.=) drop_queue.queue;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % is not a queue', queue_name USING ERRCODE = 'wrong_object_type';
    END IF;
    IF NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class AS c
                                   WHERE c.oid OPERATOR(pg_catalog.=) queue), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', queue_name USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- A distributed queue (0.3.2): each shard's registration on its worker goes first.
    FOR shard_row IN SELECT p.part, p.shard FROM ck.distributed_queues AS q,
             LATERAL ROWS FROM (pg_catalog.unnest(q.parts), pg_catalog.unnest(q.shards)) AS p(part, shard)
             WHERE q.queue OPERATOR(pg_catalog.=) drop_queue.queue LOOP
        EXECUTE pg_catalog.format('SELECT ck_internal.detach_queue_shard($2::pg_catalog.regclass) FROM (SELECT pg_catalog.count(*)'
                                  ' FROM %s WHERE part OPERATOR(pg_catalog.=) $1 AND id OPERATOR(pg_catalog.=) 0) AS s', queue_name)
            USING shard_row.part, shard_row.shard;
    END LOOP;
    DELETE FROM ck.distributed_queues AS q WHERE q.queue OPERATOR(pg_catalog.=) drop_queue.queue;
    DELETE FROM ck.queues AS q WHERE q.queue OPERATOR(pg_catalog.=) drop_queue.queue;
    DELETE FROM ck.unique_windows AS w WHERE w.queue OPERATOR(pg_catalog.=) drop_queue.queue;   -- 0.3.0
    DELETE FROM ck.concurrency_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) drop_queue.queue;
    DELETE FROM ck.concurrency_slots AS s WHERE s.queue OPERATOR(pg_catalog.=) drop_queue.queue;
    DELETE FROM ck.job_dependencies AS d WHERE d.queue OPERATOR(pg_catalog.=) drop_queue.queue;   -- 0.3.1
    DELETE FROM ck.dependency_departures AS d WHERE d.queue OPERATOR(pg_catalog.=) drop_queue.queue;
    EXECUTE pg_catalog.format('DROP TABLE %s, %s', queue_name,
        (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, dead, 0)).identity);
END
$$;
COMMENT ON FUNCTION ck.drop_queue(regclass) IS 'drops a queue, its dead letters and its registration';

CREATE OR REPLACE FUNCTION ck.distribute_queue(queue regclass, shard_count integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
DECLARE
    queue_name pg_catalog.text := (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, queue, 0)).identity;
    config record;
    dead_name pg_catalog.text;
    n integer;
    step bigint;
    v integer := 0;
    i integer;
    found_parts integer := 0;
    parts integer[];
    shards pg_catalog.text[];
    dead_shards pg_catalog.text[];
    first_id bigint;
    index_name pg_catalog.text;
    busy boolean;
BEGIN
    IF queue IS NULL THEN
        RAISE EXCEPTION 'queue must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension AS e WHERE e.extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION 'ck.distribute_queue needs Citus' USING ERRCODE = 'feature_not_supported',
            DETAIL = 'The extension citus is not installed in this database.',
            HINT = 'Run it on the coordinator of a Citus cluster, after CREATE EXTENSION citus there and on the workers.';
    END IF;
    SELECT q.dead_letters, q.lease, q.max_attempts, q.notify INTO config
    FROM ck.queues AS q WHERE q.queue OPERATOR(pg_catalog.=) distribute_queue.queue;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % is not a queue', queue_name USING ERRCODE = 'wrong_object_type',
            HINT = 'Create queues with ck.create_queue().';
    END IF;
    IF EXISTS (SELECT FROM ck.distributed_queues AS d WHERE d.queue OPERATOR(pg_catalog.=) distribute_queue.queue)
       OR EXISTS (SELECT FROM pg_catalog.pg_dist_partition AS p WHERE p.logicalrelid OPERATOR(pg_catalog.=) distribute_queue.queue) THEN
        RAISE EXCEPTION 'queue % is already distributed', queue_name USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    n := COALESCE(shard_count, pg_catalog.current_setting('citus.shard_count')::integer);
    IF n OPERATOR(pg_catalog.<) 1 OR n OPERATOR(pg_catalog.>) 1024 THEN
        RAISE EXCEPTION 'shard_count must be between 1 and 1024, got %', n USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF config.notify THEN
        RAISE EXCEPTION 'queue % notifies listeners on enqueue, which a distributed queue does not', queue_name
            USING ERRCODE = 'feature_not_supported', HINT = 'Make the queue with notify => false and wait with ck.claim_wait.';
    END IF;
    dead_name := (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, config.dead_letters, 0)).identity;
    EXECUTE pg_catalog.format('LOCK TABLE %s, %s IN ACCESS EXCLUSIVE MODE', queue_name, dead_name);
    -- What a shard cannot keep right on its own: keys, windows and limits that span the jobs
    -- already in the queue, and dependencies.
    IF EXISTS (SELECT FROM ck.concurrency_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) distribute_queue.queue)
       OR EXISTS (SELECT FROM ck.unique_windows AS w WHERE w.queue OPERATOR(pg_catalog.=) distribute_queue.queue)
       OR EXISTS (SELECT FROM ck.job_dependencies AS j WHERE j.queue OPERATOR(pg_catalog.=) distribute_queue.queue) THEN
        RAISE EXCEPTION 'queue % has concurrency limits, unique windows or dependencies', queue_name
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Distribute the queue before setting limits; dependencies are not supported on distributed queues.';
    END IF;
    EXECUTE pg_catalog.format('SELECT EXISTS (SELECT FROM %s WHERE unique_key IS NOT NULL OR concurrency_key IS NOT NULL'
                              ' OR waiting_for IS NOT NULL)', queue_name) INTO STRICT busy;
    IF busy THEN
        RAISE EXCEPTION 'queue % holds jobs with a unique key, a concurrency key or dependencies', queue_name
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Let those jobs finish first: after distribution each key lives in the shard its hash names.';
    END IF;

    -- A value of part for each shard, in the order of the shards' hash ranges (Citus splits
    -- the 32-bit hash space into n equal ranges; checked against Citus below).
    step := 4294967296 OPERATOR(pg_catalog./) n;
    parts := pg_catalog.array_fill(NULL::integer, ARRAY[n]);
    WHILE found_parts OPERATOR(pg_catalog.<) n LOOP
        i := LEAST((pg_catalog.worker_hash(v)::bigint OPERATOR(pg_catalog.+) 2147483648) OPERATOR(pg_catalog./) step,
                   n OPERATOR(pg_catalog.-) 1);
        IF parts[i OPERATOR(pg_catalog.+) 1] IS NULL THEN
            parts[i OPERATOR(pg_catalog.+) 1] := v;
            found_parts := found_parts OPERATOR(pg_catalog.+) 1;
        END IF;
        v := v OPERATOR(pg_catalog.+) 1;
    END LOOP;

    -- Jobs (and dead letters) already there go to the shard their id names; new ids follow them.
    EXECUTE pg_catalog.format('SELECT GREATEST((SELECT pg_catalog.max(id) FROM %s), (SELECT pg_catalog.max(id) FROM %s), 0)',
                              queue_name, dead_name) INTO STRICT first_id;
    first_id := first_id OPERATOR(pg_catalog./) n OPERATOR(pg_catalog.+) 1;
    -- Citus takes no table with triggers: the shards get theirs (ck_left comes with limits, refused above).
    FOR index_name IN SELECT t.tgname FROM pg_catalog.pg_trigger AS t WHERE t.tgrelid OPERATOR(pg_catalog.=) distribute_queue.queue
        AND t.tgname OPERATOR(pg_catalog.=) ANY (ARRAY['ck_ready', 'ck_changed', 'ck_dependency_left', 'ck_left']) LOOP
        EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', index_name, queue_name);
    END LOOP;
    FOR index_name IN SELECT pg_catalog.format('%I.%I', ns.nspname, c.relname) FROM pg_catalog.pg_index AS x
        JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) x.indexrelid
        JOIN pg_catalog.pg_namespace AS ns ON ns.oid OPERATOR(pg_catalog.=) c.relnamespace
        WHERE x.indrelid OPERATOR(pg_catalog.=) distribute_queue.queue AND x.indisunique AND NOT x.indisprimary LOOP
        EXECUTE pg_catalog.format('DROP INDEX %s', index_name);
    END LOOP;
    EXECUTE pg_catalog.format(
        'ALTER TABLE %1$s ADD COLUMN part integer; ALTER TABLE %2$s ADD COLUMN part integer;'
        ' UPDATE %1$s SET part = ($1::integer[])[(id OPERATOR(pg_catalog.%%) %3$s OPERATOR(pg_catalog.+) %3$s) OPERATOR(pg_catalog.%%) %3$s OPERATOR(pg_catalog.+) 1];'
        ' UPDATE %2$s SET part = ($1::integer[])[(id OPERATOR(pg_catalog.%%) %3$s OPERATOR(pg_catalog.+) %3$s) OPERATOR(pg_catalog.%%) %3$s OPERATOR(pg_catalog.+) 1];'
        ' UPDATE %2$s SET job = job OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(''part'', part);'
        ' ALTER TABLE %1$s ALTER COLUMN part SET NOT NULL, ALTER COLUMN id DROP IDENTITY IF EXISTS,'
        '   DROP CONSTRAINT %4$I, ADD PRIMARY KEY (id, part);'
        ' ALTER TABLE %2$s ALTER COLUMN part SET NOT NULL, DROP CONSTRAINT %5$I, ADD PRIMARY KEY (id, part)',
        queue_name, dead_name, n,
        (SELECT c.conname FROM pg_catalog.pg_constraint AS c WHERE c.conrelid OPERATOR(pg_catalog.=) distribute_queue.queue AND c.contype OPERATOR(pg_catalog.=) 'p'),
        (SELECT c.conname FROM pg_catalog.pg_constraint AS c WHERE c.conrelid OPERATOR(pg_catalog.=) config.dead_letters AND c.contype OPERATOR(pg_catalog.=) 'p'))
        USING parts;
    PERFORM pg_catalog.create_distributed_table(queue, 'part', shard_count => n);
    PERFORM pg_catalog.create_distributed_table(config.dead_letters, 'part', colocate_with => queue_name);
    PERFORM pg_catalog.truncate_local_data_after_distributing_table(queue);
    PERFORM pg_catalog.truncate_local_data_after_distributing_table(config.dead_letters);

    SELECT pg_catalog.array_agg(pg_catalog.shard_name(queue, s.shardid) ORDER BY s.shardminvalue::integer),
           pg_catalog.array_agg(pg_catalog.shard_name(config.dead_letters, t.shardid) ORDER BY s.shardminvalue::integer)
    INTO shards, dead_shards
    FROM pg_catalog.pg_dist_shard AS s JOIN pg_catalog.pg_dist_shard AS t
      ON t.logicalrelid OPERATOR(pg_catalog.=) config.dead_letters AND t.shardminvalue OPERATOR(pg_catalog.=) s.shardminvalue
    WHERE s.logicalrelid OPERATOR(pg_catalog.=) distribute_queue.queue;
    FOR i IN 1..n LOOP
        IF pg_catalog.shard_name(queue, pg_catalog.get_shard_id_for_distribution_column(queue, parts[i])) OPERATOR(pg_catalog.<>) shards[i] THEN
            RAISE EXCEPTION 'part % does not land in shard % of queue %', parts[i], shards[i], queue_name
                USING ERRCODE = 'internal_error';
        END IF;
        -- Routed by part to the worker holding shard i (the same statement as the coordinator's
        -- calls): the shard becomes a queue there, and the node learns the queue's distribution.
        EXECUTE pg_catalog.format('SELECT ck_internal.attach_queue_shard($2::pg_catalog.regclass, $3::pg_catalog.regclass, $1, %s, %s, %s, %L, %s),'
                                  ' ck_internal.register_distributed_queue(%L, $4, $5)'
                                  ' FROM (SELECT pg_catalog.count(*) FROM %s WHERE part OPERATOR(pg_catalog.=) $1 AND id OPERATOR(pg_catalog.=) 0) AS s',
                                  i OPERATOR(pg_catalog.-) 1, n, first_id, config.lease, config.max_attempts, queue_name, queue_name)
        USING parts[i], shards[i], dead_shards[i], parts, shards;
    END LOOP;
    PERFORM ck_internal.register_distributed_queue(queue_name, parts, shards);
END
$$;
COMMENT ON FUNCTION ck.distribute_queue(regclass, integer) IS
'on a Citus cluster: distributes a queue (and its dead letters) over the workers; every queue call above keeps working on it, each touching one shard';

CREATE OR REPLACE FUNCTION ck_internal.attach_queue_shard(shard regclass, dead_shard regclass, part integer, shard_index integer,
                                      shard_count integer, first_id bigint, lease interval, max_attempts integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
DECLARE
    s pg_catalog.text := (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, shard, 0)).identity;
    d pg_catalog.text := (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, dead_shard, 0)).identity;
    seq pg_catalog.text := (SELECT pg_catalog.format('%I.%I', n.nspname, pg_catalog.concat(c.relname, '_ck_id'))
        FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
        WHERE c.oid OPERATOR(pg_catalog.=) shard);
BEGIN
    EXECUTE pg_catalog.format('CREATE SEQUENCE %s START %s OWNED BY %s.id', seq, first_id, s);
    EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN id SET DEFAULT pg_catalog.nextval(%L::pg_catalog.regclass)'
                              ' OPERATOR(pg_catalog.*) %s OPERATOR(pg_catalog.+) %s', s, seq, shard_count, shard_index);
    EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN part SET DEFAULT %s', s, part);
    EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN part SET DEFAULT %s', d, part);
    EXECUTE pg_catalog.format('CREATE UNIQUE INDEX ON %s (unique_key) WHERE unique_key IS NOT NULL', s);
    EXECUTE pg_catalog.format('CREATE TRIGGER ck_ready AFTER INSERT ON %s REFERENCING NEW TABLE AS ck_new'
                              ' FOR EACH STATEMENT EXECUTE FUNCTION ck_internal.queue_ready()', s);
    EXECUTE pg_catalog.format('CREATE TRIGGER ck_changed BEFORE UPDATE OR DELETE ON %s'
                              ' FOR EACH STATEMENT EXECUTE FUNCTION ck_internal.queue_changed()', s);
    EXECUTE pg_catalog.format('CREATE TRIGGER ck_dependency_left AFTER DELETE ON %s FOR EACH ROW'
                              ' WHEN (OLD.has_dependants) EXECUTE FUNCTION ck_internal.queue_dependency_left()', s);
    INSERT INTO ck.queues (queue, dead_letters, lease, max_attempts, notify)
    VALUES (shard, dead_shard, attach_queue_shard.lease, attach_queue_shard.max_attempts, false);
END
$$;
COMMENT ON FUNCTION ck_internal.attach_queue_shard(regclass, regclass, integer, integer, integer, bigint, interval, integer) IS
'internal, run by ck.distribute_queue on the worker holding a shard: makes the shard a queue of its own there';
COMMENT ON FUNCTION ck_internal.queues_changed() IS
'trigger on ck.queues: drops the plans cached from a queue''s old settings';
COMMENT ON FUNCTION ck_internal.notify_queue() IS
'statement trigger of queues made with notify => true: NOTIFY "schema.queue" once per inserting statement';
COMMENT ON FUNCTION ck_internal.queue_ready() IS
'statement trigger of every queue (AFTER INSERT, REFERENCING NEW TABLE): wakes the queue''s ck.claim_wait waiters when the transaction commits, and tells the claim frontier where the new jobs are (with the library preloaded)';
COMMENT ON FUNCTION ck_internal.queue_changed() IS
'statement trigger of every queue (BEFORE UPDATE OR DELETE): an UPDATE or DELETE not issued by the extension''s functions makes the claim frontier start over when its transaction ends';
COMMENT ON FUNCTION ck_internal.queue_left() IS
'statement trigger of every queue (AFTER DELETE, REFERENCING OLD TABLE): each job of a limited concurrency key that left the queue hands its slot to the oldest parked job of its key, or frees it';
COMMENT ON FUNCTION ck_internal.queue_dependency_left() IS
'row trigger of every queue (AFTER DELETE, WHEN the job has dependants): records the departure and resolves a batch of its dependants (counted down if it completed, buried if it was buried or cancelled)';
COMMENT ON FUNCTION ck_internal.claim_frontier(regclass) IS
'where claims of each priority start reading the claim index, (run_at, id) on (NULL run_at: at its beginning; NULL id: from the first job of run_at); no rows while the frontier is not known (no claim yet, reset, more than 64 priorities: ck.claim_path says why)';
COMMENT ON FUNCTION ck_internal.register_distributed_queue(text, integer[], text[]) IS
'internal, run by ck.distribute_queue on every node holding a shard and on the coordinator: the queue''s row of ck.distributed_queues there, so that calls on that node route to the shards';
COMMENT ON FUNCTION ck_internal.detach_queue_shard(regclass) IS
'internal, run by ck.drop_queue on the worker holding a shard of a distributed queue: removes the shard''s registrations there, the queue''s row of ck.distributed_queues among them';
