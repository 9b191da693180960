-- concurrency_kit 0.2.2 -> 0.3.0: unique jobs and cancellation (the first of the 0.3 queue
-- features). Every queue gets a nullable unique_key column and a partial unique index on it
-- (adding a nullable column rewrites nothing; the index build reads the table once). Jobs
-- stay where they are. ck.enqueue takes unique_key at the end (so it is made again);
-- ck.enqueue_unique and ck.cancel are new.
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.3.0'" to load this file. \quit

DROP FUNCTION ck.enqueue(regclass, jsonb, timestamptz, integer);
CREATE FUNCTION ck.enqueue(queue regclass, payload jsonb DEFAULT '{}', run_at timestamptz DEFAULT now(),
                           priority integer DEFAULT 0, unique_key text DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_enqueue';
COMMENT ON FUNCTION ck.enqueue(regclass, jsonb, timestamptz, integer, text) IS
'adds one job (lower priority first; not before run_at) and returns its id; with a unique_key, a job already in the queue with that key is returned instead and nothing is inserted';

CREATE FUNCTION ck.enqueue_unique(queue regclass, unique_key text, payload jsonb DEFAULT '{}',
                                  run_at timestamptz DEFAULT now(), priority integer DEFAULT 0,
                                  OUT id bigint, OUT inserted boolean)
RETURNS record
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_enqueue_unique';
COMMENT ON FUNCTION ck.enqueue_unique(regclass, text, jsonb, timestamptz, integer) IS
'ck.enqueue with a unique key, telling whether it inserted: the job''s id, and false when a job with that key (waiting, scheduled or running) was already in the queue';

CREATE FUNCTION ck.cancel(queue regclass, id bigint)
RETURNS text
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_cancel';
COMMENT ON FUNCTION ck.cancel(regclass, bigint) IS
'moves a job to the dead letters with the reason cancelled: ''cancelled'' (it was waiting or scheduled), ''cancelling'' (a worker holds a valid lease: its next acknowledgement finds the lease lost) or ''gone'' (no such job in the queue)';

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
