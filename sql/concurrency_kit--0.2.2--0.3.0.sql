-- concurrency_kit 0.2.2 -> 0.3.0: unique jobs and cancellation (the first of the 0.3 queue
-- features). Every queue gets a nullable unique_key column and a partial unique index on it
-- (adding a nullable column rewrites nothing; the index build reads the table once). Jobs
-- stay where they are. ck.enqueue takes unique_key at the end (so it is made again);
-- ck.enqueue_unique, ck.cancel and ck.queue_activity are new, and so is the table
-- ck.unique_windows (unique keys held for a time window); ck.drop_queue clears a queue's windows.
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.3.0'" to load this file. \quit

DROP FUNCTION ck.enqueue(regclass, jsonb, timestamptz, integer);
CREATE FUNCTION ck.enqueue(queue regclass, payload jsonb DEFAULT '{}', run_at timestamptz DEFAULT now(),
                           priority integer DEFAULT 0, unique_key text DEFAULT NULL, unique_for interval DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_enqueue';
COMMENT ON FUNCTION ck.enqueue(regclass, jsonb, timestamptz, integer, text, interval) IS
'adds one job (lower priority first; not before run_at) and returns its id; with a unique_key, a job already in the queue with that key is returned instead and nothing is inserted; with unique_for too, the key stays taken that long, even after its job has left (the id returned is then that of the job that took it)';

CREATE FUNCTION ck.enqueue_unique(queue regclass, unique_key text, payload jsonb DEFAULT '{}',
                                  run_at timestamptz DEFAULT now(), priority integer DEFAULT 0,
                                  unique_for interval DEFAULT NULL, OUT id bigint, OUT inserted boolean)
RETURNS record
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_enqueue_unique';
COMMENT ON FUNCTION ck.enqueue_unique(regclass, text, jsonb, timestamptz, integer, interval) IS
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

-- Existing queues: the column and its index, as ck.create_queue now makes them. A queue made
-- by ck.create_queue after the new library was installed but before this update already has
-- both (the library makes the table); any other column of that name is the user's, and refused.
DO $$
DECLARE
    q pg_catalog.regclass;
    has_column boolean;
    ours boolean;
BEGIN
    FOR q IN SELECT r.queue FROM ck.queues AS r JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) r.queue LOOP
        SELECT true, a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.text'::pg_catalog.regtype AND EXISTS (
                   SELECT FROM pg_catalog.pg_index AS i
                   WHERE i.indrelid OPERATOR(pg_catalog.=) q AND i.indisunique AND i.indpred IS NOT NULL
                     AND i.indnatts OPERATOR(pg_catalog.=) 1 AND i.indkey[0] OPERATOR(pg_catalog.=) a.attnum)
          INTO has_column, ours
          FROM pg_catalog.pg_attribute AS a
         WHERE a.attrelid OPERATOR(pg_catalog.=) q AND a.attname OPERATOR(pg_catalog.=) 'unique_key' AND NOT a.attisdropped;
        CONTINUE WHEN ours;
        IF has_column THEN
            RAISE EXCEPTION 'queue % already has a column named unique_key', q
                USING ERRCODE = 'duplicate_column', HINT = 'Rename that column, then update the extension: 0.3.0 adds its own.';
        END IF;
        EXECUTE pg_catalog.format('ALTER TABLE %s ADD COLUMN unique_key pg_catalog.text', q);
        EXECUTE pg_catalog.format('CREATE UNIQUE INDEX ON %s (unique_key) WHERE unique_key IS NOT NULL', q);
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
