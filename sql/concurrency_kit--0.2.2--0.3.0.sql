-- concurrency_kit 0.2.2 -> 0.3.0: unique jobs (with time windows), concurrency limits per key,
-- cancellation and activity counters. Every queue gets the nullable columns unique_key,
-- concurrency_key and parked_run_at, a partial unique index on unique_key, a partial index on
-- parked jobs (adding nullable columns rewrites nothing; each index build reads the table once;
-- the trigger ck_left comes with a queue's first concurrency limit). Jobs stay where they are. ck.enqueue takes unique_key,
-- unique_for and concurrency_key at the end (so it is made again); ck.enqueue_unique, ck.cancel,
-- ck.queue_activity and ck.set_concurrency_limit are new, and so are the tables ck.unique_windows,
-- ck.concurrency_limits and ck.concurrency_slots; ck.drop_queue clears a queue's rows in them.
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.3.0'" to load this file. \quit

DROP FUNCTION ck.enqueue(regclass, jsonb, timestamptz, integer);
CREATE FUNCTION ck.enqueue(queue regclass, payload jsonb DEFAULT '{}', run_at timestamptz DEFAULT now(),
                           priority integer DEFAULT 0, unique_key text DEFAULT NULL, unique_for interval DEFAULT NULL,
                           concurrency_key text DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_enqueue';
COMMENT ON FUNCTION ck.enqueue(regclass, jsonb, timestamptz, integer, text, interval, text) IS
'adds one job (lower priority first; not before run_at) and returns its id; with a unique_key, a job already in the queue with that key is returned instead and nothing is inserted; with unique_for too, the key stays taken that long, even after its job has left (the id returned is then that of the job that took it); with a concurrency_key, the job counts against that key''s limit (ck.set_concurrency_limit)';

CREATE FUNCTION ck.queue_left() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'ck_queue_left';
COMMENT ON FUNCTION ck.queue_left() IS
'statement trigger of every queue (AFTER DELETE, REFERENCING OLD TABLE): each job of a limited concurrency key that left the queue hands its slot to the oldest parked job of its key, or frees it';

CREATE FUNCTION ck.enqueue_unique(queue regclass, unique_key text, payload jsonb DEFAULT '{}',
                                  run_at timestamptz DEFAULT now(), priority integer DEFAULT 0,
                                  unique_for interval DEFAULT NULL, concurrency_key text DEFAULT NULL,
                                  OUT id bigint, OUT inserted boolean)
RETURNS record
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_enqueue_unique';
COMMENT ON FUNCTION ck.enqueue_unique(regclass, text, jsonb, timestamptz, integer, interval, text) IS
'ck.enqueue with a unique key, telling whether it inserted: the job''s id, and false when a job with that key (waiting, scheduled or running) was already in the queue, or took the key''s unique_for window';

CREATE FUNCTION ck.cancel(queue regclass, id bigint)
RETURNS text
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_cancel';
COMMENT ON FUNCTION ck.cancel(regclass, bigint) IS
'moves a job to the dead letters with the reason cancelled: ''cancelled'' (it was waiting or scheduled), ''cancelling'' (a worker holds a valid lease: its next acknowledgement finds the lease lost) or ''gone'' (no such job in the queue)';

-- A dropped queue's unique-key windows go with it.
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
    EXECUTE pg_catalog.format('DROP TABLE %s, %s', queue_name,
        (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, dead, 0)).identity);
END
$$;

CREATE FUNCTION ck.queue_activity()
RETURNS TABLE (queue regclass, enqueued bigint, claimed bigint, completed bigint, failed bigint, retried bigint,
               buried bigint, cancelled bigint, lost_acks bigint, duplicates bigint, since timestamptz)
LANGUAGE c VOLATILE PARALLEL RESTRICTED SECURITY INVOKER ROWS 10
AS 'MODULE_PATHNAME', 'ck_queue_activity';
COMMENT ON FUNCTION ck.queue_activity() IS
'counters per queue of this database since the server started (or since the queue was first used): jobs enqueued, claimed, completed, failed (of which retried and buried), cancelled, counted when their transaction commits; acknowledgements that found the lease lost and duplicate unique keys refused, counted at once; needs the library preloaded';

-- Existing queues: the columns and indexes ck.create_queue now makes. A queue made by
-- ck.create_queue after the new library was installed but before this update already has the
-- columns and indexes (the library makes the table); any other column of those names is the
-- user's, and refused.
DO $$
DECLARE
    q pg_catalog.regclass;
    col pg_catalog.text;
    found_type pg_catalog.regtype;
    want_type pg_catalog.regtype;
    ours boolean;
BEGIN
    FOR q IN SELECT r.queue FROM ck.queues AS r JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) r.queue LOOP
        FOREACH col IN ARRAY ARRAY['unique_key', 'concurrency_key', 'parked_run_at'] LOOP
            want_type := CASE col WHEN 'parked_run_at' THEN 'pg_catalog.timestamptz' ELSE 'pg_catalog.text' END;
            found_type := NULL;
            -- ck's columns come with a partial index that starts with them.
            SELECT a.atttypid, EXISTS (
                       SELECT FROM pg_catalog.pg_index AS i
                       WHERE i.indrelid OPERATOR(pg_catalog.=) q AND i.indpred IS NOT NULL
                         AND i.indkey[0] OPERATOR(pg_catalog.=) (
                             SELECT k.attnum FROM pg_catalog.pg_attribute AS k
                             WHERE k.attrelid OPERATOR(pg_catalog.=) q AND NOT k.attisdropped
                               AND k.attname OPERATOR(pg_catalog.=) CASE col WHEN 'unique_key' THEN 'unique_key'
                                                                             ELSE 'concurrency_key' END))
              INTO found_type, ours
              FROM pg_catalog.pg_attribute AS a
             WHERE a.attrelid OPERATOR(pg_catalog.=) q AND a.attname OPERATOR(pg_catalog.=) col AND NOT a.attisdropped;
            CONTINUE WHEN found_type OPERATOR(pg_catalog.=) want_type AND ours;
            IF found_type IS NOT NULL THEN
                RAISE EXCEPTION 'queue % already has a column named %', q, col
                    USING ERRCODE = 'duplicate_column', HINT = 'Rename that column, then update the extension: 0.3.0 adds its own.';
            END IF;
            EXECUTE pg_catalog.format('ALTER TABLE %s ADD COLUMN %I %s', q, col, want_type);
            IF col OPERATOR(pg_catalog.=) 'unique_key' THEN
                EXECUTE pg_catalog.format('CREATE UNIQUE INDEX ON %s (unique_key) WHERE unique_key IS NOT NULL', q);
            ELSIF col OPERATOR(pg_catalog.=) 'parked_run_at' THEN
                EXECUTE pg_catalog.format('CREATE INDEX ON %s (concurrency_key, priority, parked_run_at, id)'
                                          ' WHERE parked_run_at IS NOT NULL', q);
            END IF;
        END LOOP;
    END LOOP;
END
$$;

-- Unique keys held for a time window (ck.enqueue(..., unique_key, unique_for)), past the life of
-- their job: one row per queue and key until the window ends; an enqueue of the key after that
-- takes the row again, and windowed enqueues remove ended rows of their queue a few at a time.
-- Whoever may insert into a queue may read and write its rows (row-level security).
CREATE TABLE ck.unique_windows (
    queue      regclass NOT NULL,
    unique_key text NOT NULL,
    job        bigint,
    until      timestamptz NOT NULL,
    PRIMARY KEY (queue, unique_key)
);
CREATE INDEX unique_windows_until ON ck.unique_windows (queue, until);
COMMENT ON TABLE ck.unique_windows IS 'unique keys of ck.enqueue(..., unique_for) and the job that took each, until the window ends';
ALTER TABLE ck.unique_windows ENABLE ROW LEVEL SECURITY;
CREATE POLICY unique_windows_enqueuer ON ck.unique_windows FOR ALL
    USING (pg_catalog.has_table_privilege(queue, 'INSERT'))
    WITH CHECK (pg_catalog.has_table_privilege(queue, 'INSERT'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.unique_windows TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.unique_windows', '');

-- Concurrency limits (ck.set_concurrency_limit): at most max_running jobs of one concurrency key
-- are ready or leased at once; the key's other jobs wait parked (run_at 'infinity', their own
-- run_at kept in parked_run_at) until a job of the key leaves the queue and hands its slot on.
-- A NULL key is the default for every key without a limit of its own. Anyone may read the
-- limits; only the owner of a queue may set them (row-level security, as ck.queues).
CREATE TABLE ck.concurrency_limits (
    queue           regclass NOT NULL,
    concurrency_key text,
    max_running     integer NOT NULL CHECK (max_running >= 0),
    CONSTRAINT concurrency_limits_key UNIQUE NULLS NOT DISTINCT (queue, concurrency_key)
);
COMMENT ON TABLE ck.concurrency_limits IS 'per queue and concurrency key (NULL: the default), how many jobs may be ready or leased at once';
ALTER TABLE ck.concurrency_limits ENABLE ROW LEVEL SECURITY;
CREATE POLICY concurrency_limits_read ON ck.concurrency_limits FOR SELECT USING (true);
CREATE POLICY concurrency_limits_owner ON ck.concurrency_limits FOR ALL
    USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'))
    WITH CHECK (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.concurrency_limits TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.concurrency_limits', '');

-- The free slots of each limited key: the row is locked by every enqueue of the key (take a slot
-- or park) and by every job of it that leaves the queue (hand the slot to the oldest parked
-- job, or free it), which keeps free = limit - jobs of the key not parked. Whoever may change
-- a queue may read and write its keys' rows.
CREATE TABLE ck.concurrency_slots (
    queue           regclass NOT NULL,
    concurrency_key text NOT NULL,
    free            integer NOT NULL,
    PRIMARY KEY (queue, concurrency_key)
);
COMMENT ON TABLE ck.concurrency_slots IS 'free slots per queue and limited concurrency key (negative after a limit was lowered below the jobs already running)';
ALTER TABLE ck.concurrency_slots ENABLE ROW LEVEL SECURITY;
CREATE POLICY concurrency_slots_writer ON ck.concurrency_slots FOR ALL
    USING (pg_catalog.has_table_privilege(queue, 'INSERT, UPDATE, DELETE'))
    WITH CHECK (pg_catalog.has_table_privilege(queue, 'INSERT, UPDATE, DELETE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.concurrency_slots TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.concurrency_slots', '');

-- Settles a key (or, for the default, every key of the queue without a limit of its own) under
-- its new limit: its slot row locked first, then as many parked jobs unparked as the limit
-- leaves room for; without a limit, all of them, and the slot row goes.
CREATE FUNCTION ck.set_concurrency_limit(queue regclass, concurrency_key text, max_running integer)
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
                                      ' WHERE j.concurrency_key OPERATOR(pg_catalog.=) $1 AND j.parked_run_at IS NOT NULL',
                                      queue_name) USING k;
            DELETE FROM ck.concurrency_slots AS s WHERE s.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue
                AND s.concurrency_key OPERATOR(pg_catalog.=) k;
            CONTINUE;
        END IF;
        EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM %s AS j'
                                  ' WHERE j.concurrency_key OPERATOR(pg_catalog.=) $1 AND j.parked_run_at IS NULL',
                                  queue_name) INTO unparked USING k;
        EXECUTE pg_catalog.format('WITH pick AS (SELECT p.id FROM %1$s AS p WHERE p.concurrency_key OPERATOR(pg_catalog.=) $1'
                                  '   AND p.parked_run_at IS NOT NULL ORDER BY p.priority, p.parked_run_at, p.id LIMIT $2 FOR UPDATE)'
                                  ' UPDATE %1$s AS j SET run_at = GREATEST(j.parked_run_at, pg_catalog.clock_timestamp()), parked_run_at = NULL FROM pick'
                                  ' WHERE j.id OPERATOR(pg_catalog.=) pick.id', queue_name)
            USING k, GREATEST(lim OPERATOR(pg_catalog.-) unparked, 0);
        GET DIAGNOSTICS moved = ROW_COUNT;
        UPDATE ck.concurrency_slots AS s SET free = (lim OPERATOR(pg_catalog.-) unparked OPERATOR(pg_catalog.-) moved)::pg_catalog.int4
            WHERE s.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue AND s.concurrency_key OPERATOR(pg_catalog.=) k;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ck.set_concurrency_limit(regclass, text, integer) IS
'at most max_running jobs of the concurrency key are ready or leased at once (the others wait, parked, and move up as jobs of the key leave the queue); a NULL key sets the default for every key without a limit of its own; NULL max_running removes the limit';
