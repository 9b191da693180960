-- concurrency_kit 0.3.0 -> 0.3.1: job dependencies (ck.enqueue(..., after)), optimistic versioned
-- updates and row locks taken in key order (ck.update_if_version, ck.version_guard_ddl,
-- ck.lock_rows).
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.3.1'" to load this file. \quit

-- ck.enqueue takes after at the end (so it is made again).
DROP FUNCTION ck.enqueue(regclass, jsonb, timestamptz, integer, text, interval, text);
CREATE FUNCTION ck.enqueue(queue regclass, payload jsonb DEFAULT '{}', run_at timestamptz DEFAULT now(),
                           priority integer DEFAULT 0, unique_key text DEFAULT NULL, unique_for interval DEFAULT NULL,
                           concurrency_key text DEFAULT NULL, after bigint[] DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_enqueue';
COMMENT ON FUNCTION ck.enqueue(regclass, jsonb, timestamptz, integer, text, interval, text, bigint[]) IS
'adds one job (lower priority first; not before run_at) and returns its id; with a unique_key, a job already in the queue with that key is returned instead and nothing is inserted; with unique_for too, the key stays taken that long, even after its job has left (the id returned is then that of the job that took it); with a concurrency_key, the job counts against that key''s limit (ck.set_concurrency_limit); with after, the job waits until every listed job still in the queue has completed, and is buried if one of them is buried or cancelled';

-- Dependencies (ck.enqueue(..., after)): a job waits, parked, until every job it names that was
-- still in the queue has completed. One row per (job waited for, dependant) while it waits;
-- a job with dependants that leaves the queue leaves a row in ck.dependency_departures until
-- its dependants are counted down (completed) or buried (buried, cancelled), a batch at a time.
-- Whoever may write to a queue may read and write its rows (row-level security).
CREATE TABLE ck.job_dependencies (
    queue     regclass NOT NULL,
    job       bigint NOT NULL,
    dependant bigint NOT NULL,
    PRIMARY KEY (queue, job, dependant)
);
COMMENT ON TABLE ck.job_dependencies IS 'jobs of ck.enqueue(..., after) still waiting (dependant) for a job of the queue (job)';
ALTER TABLE ck.job_dependencies ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_dependencies_writer ON ck.job_dependencies FOR ALL
    USING (pg_catalog.has_table_privilege(queue, 'INSERT, UPDATE, DELETE'))
    WITH CHECK (pg_catalog.has_table_privilege(queue, 'INSERT, UPDATE, DELETE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.job_dependencies TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.job_dependencies', '');

CREATE TABLE ck.dependency_departures (
    queue       regclass NOT NULL,
    job         bigint NOT NULL,
    failure     text,
    departed_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (queue, job)
);
COMMENT ON TABLE ck.dependency_departures IS 'jobs with dependants that left the queue, until their dependants are resolved (failure NULL: completed; else the reason the dependants are buried)';
ALTER TABLE ck.dependency_departures ENABLE ROW LEVEL SECURITY;
CREATE POLICY dependency_departures_writer ON ck.dependency_departures FOR ALL
    USING (pg_catalog.has_table_privilege(queue, 'INSERT, UPDATE, DELETE'))
    WITH CHECK (pg_catalog.has_table_privilege(queue, 'INSERT, UPDATE, DELETE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.dependency_departures TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.dependency_departures', '');

CREATE FUNCTION ck.queue_dependency_left() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'ck_queue_dependency_left';
COMMENT ON FUNCTION ck.queue_dependency_left() IS
'row trigger of every queue (AFTER DELETE, WHEN the job has dependants): records the departure and resolves a batch of its dependants (counted down if it completed, buried if it was buried or cancelled)';

-- ck.drop_queue also clears a queue's rows of the two new tables.
CREATE OR REPLACE FUNCTION ck.drop_queue(queue regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
DECLARE
    -- Names schema-qualified from the OIDs, whatever the caller's search_path.
    -- (Type names too: PL/pgSQL resolves them with the caller's search_path.)
    queue_name pg_catalog.text := (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, queue, 0)).identity;
    dead pg_catalog.regclass;
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

-- ck.set_concurrency_limit moves no job that still waits for its dependencies.
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
                                  ' FOR EACH STATEMENT EXECUTE FUNCTION ck.queue_left()', queue_name);
    END IF;
    FOR k IN EXECUTE pg_catalog.format(
        'SELECT DISTINCT j.concurrency_key FROM %s AS j WHERE j.concurrency_key IS NOT NULL'
        '   AND ($1 IS NULL OR j.concurrency_key OPERATOR(pg_catalog.=) $1)'
        ' UNION SELECT s.concurrency_key FROM ck.concurrency_slots AS s WHERE s.queue OPERATOR(pg_catalog.=) $2'
        '   AND ($1 IS NULL OR s.concurrency_key OPERATOR(pg_catalog.=) $1)', queue_name)
        USING concurrency_key, queue
    LOOP
        CONTINUE WHEN concurrency_key IS NULL AND EXISTS (
            SELECT FROM ck.concurrency_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue
                AND l.concurrency_key OPERATOR(pg_catalog.=) k);
        lim := (SELECT l.max_running FROM ck.concurrency_limits AS l
                WHERE l.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue
                  AND (l.concurrency_key OPERATOR(pg_catalog.=) k OR l.concurrency_key IS NULL)
                ORDER BY l.concurrency_key IS NULL LIMIT 1);
        -- The key's slot row, locked: enqueues and departures of the key wait until this commits.
        INSERT INTO ck.concurrency_slots AS s VALUES (queue, k, 0)
            ON CONFLICT ON CONSTRAINT concurrency_slots_pkey DO UPDATE SET free = s.free;
        IF lim IS NULL THEN
            EXECUTE pg_catalog.format('UPDATE %s AS j SET run_at = GREATEST(j.parked_run_at, pg_catalog.clock_timestamp()), parked_run_at = NULL'
                                      ' WHERE j.concurrency_key OPERATOR(pg_catalog.=) $1 AND j.parked_run_at IS NOT NULL AND j.waiting_for IS NULL',
                                      queue_name) USING k;
            DELETE FROM ck.concurrency_slots AS s WHERE s.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue
                AND s.concurrency_key OPERATOR(pg_catalog.=) k;
            CONTINUE;
        END IF;
        EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM %s AS j'
                                  ' WHERE j.concurrency_key OPERATOR(pg_catalog.=) $1 AND j.parked_run_at IS NULL',
                                  queue_name) INTO unparked USING k;
        EXECUTE pg_catalog.format('WITH pick AS (SELECT p.id FROM %1$s AS p WHERE p.concurrency_key OPERATOR(pg_catalog.=) $1'
                                  '   AND p.parked_run_at IS NOT NULL AND p.waiting_for IS NULL ORDER BY p.priority, p.parked_run_at, p.id LIMIT $2 FOR UPDATE)'
                                  ' UPDATE %1$s AS j SET run_at = GREATEST(j.parked_run_at, pg_catalog.clock_timestamp()), parked_run_at = NULL FROM pick'
                                  ' WHERE j.id OPERATOR(pg_catalog.=) pick.id', queue_name)
            USING k, GREATEST(lim OPERATOR(pg_catalog.-) unparked, 0);
        GET DIAGNOSTICS moved = ROW_COUNT;
        UPDATE ck.concurrency_slots AS s SET free = (lim OPERATOR(pg_catalog.-) unparked OPERATOR(pg_catalog.-) moved)::pg_catalog.int4
            WHERE s.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue AND s.concurrency_key OPERATOR(pg_catalog.=) k;
    END LOOP;
END
$$;

-- Every queue gets the nullable columns waiting_for and has_dependants (nothing is rewritten)
-- and the row trigger ck_dependency_left. A queue made by a 0.3.1 library before this update
-- has them already (adopted); a user's columns of those names stop the update (42701).
DO $$
DECLARE
    q pg_catalog.regclass;
    col pg_catalog.text;
    want_type pg_catalog.regtype;
    found_type pg_catalog.regtype;
BEGIN
    FOR q IN SELECT r.queue FROM ck.queues AS r JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) r.queue LOOP
        FOREACH col IN ARRAY ARRAY['waiting_for', 'has_dependants'] LOOP
            want_type := CASE col WHEN 'waiting_for' THEN 'pg_catalog.int4' ELSE 'pg_catalog.bool' END;
            found_type := NULL;
            SELECT a.atttypid INTO found_type FROM pg_catalog.pg_attribute AS a
             WHERE a.attrelid OPERATOR(pg_catalog.=) q AND a.attname OPERATOR(pg_catalog.=) col AND NOT a.attisdropped;
            CONTINUE WHEN found_type OPERATOR(pg_catalog.=) want_type;
            IF found_type IS NOT NULL THEN
                RAISE EXCEPTION 'queue % already has a column named %', q, col
                    USING ERRCODE = 'duplicate_column', HINT = 'Rename that column, then update the extension: 0.3.1 adds its own.';
            END IF;
            EXECUTE pg_catalog.format('ALTER TABLE %s ADD COLUMN %I %s', q, col, want_type);
        END LOOP;
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_trigger AS t WHERE t.tgrelid OPERATOR(pg_catalog.=) q
                                                              AND t.tgname OPERATOR(pg_catalog.=) 'ck_dependency_left') THEN
            EXECUTE pg_catalog.format('CREATE TRIGGER ck_dependency_left AFTER DELETE ON %s FOR EACH ROW'
                                      ' WHEN (OLD.has_dependants) EXECUTE FUNCTION ck.queue_dependency_left()', q);
        END IF;
    END LOOP;
END
$$;

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

-- PARALLEL UNSAFE like ck.volatility_audit: each function is analysed in a subtransaction,
-- which PostgreSQL refuses in parallel mode.
CREATE FUNCTION ck.lock_audit(schema name DEFAULT NULL)
RETURNS TABLE(func regprocedure, statement text, advice text)
LANGUAGE c STABLE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_lock_audit';
COMMENT ON FUNCTION ck.lock_audit(name) IS
'statements of SQL and PL/pgSQL functions that take FOR UPDATE on a table a foreign key references while the function neither deletes from it nor changes a referenced key: FOR NO KEY UPDATE would do and does not block inserts of referencing rows; a body that cannot be analysed gives a row saying so; all non-system schemas but ck when schema is NULL';
