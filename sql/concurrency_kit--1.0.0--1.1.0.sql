-- concurrency_kit 1.0.0 -> 1.1.0: the queue in production (issue 47). Every 1.0.0 call keeps
-- its meaning; what is new is opt-in per queue. Every name schema-qualified, every function
-- SECURITY INVOKER (the control file's trusted = true).
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '1.1.0'" to load this file. \quit

------------------------------------------------------------------------------------------
-- Pause and resume
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Rate limits (and ck.try_rate for any SQL)
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Job timeouts, distinct from the lease
------------------------------------------------------------------------------------------

ALTER TABLE ck.queues ADD COLUMN timeout interval CONSTRAINT queues_timeout_check
    CHECK (timeout > interval '0' AND pg_catalog.isfinite(timeout));
COMMENT ON COLUMN ck.queues.timeout IS
'how long one attempt of a job may run in all, whatever its heartbeats (NULL: no limit); then it fails with the reason timeout';

-- Not on a distributed queue (0A000): its shards are queues of their own on the workers, whose
-- rows of ck.queues the coordinator's does not reach (ck.distribute_queue refuses a queue with one).
CREATE FUNCTION ck_internal.queue_timeout_local() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER
AS $$
BEGIN
    IF EXISTS (SELECT FROM ck.distributed_queues AS d WHERE d.queue OPERATOR(pg_catalog.=) NEW.queue) THEN
        RAISE EXCEPTION 'queue % is distributed, and a distributed queue takes no job timeout', NEW.queue
            USING ERRCODE = 'feature_not_supported';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION ck_internal.queue_timeout_local() IS
'trigger on ck.queues (BEFORE INSERT OR UPDATE OF timeout, a timeout set): refuses it on a distributed queue (0A000)';
CREATE TRIGGER queues_timeout_local BEFORE INSERT OR UPDATE OF timeout ON ck.queues
    FOR EACH ROW WHEN (NEW.timeout IS NOT NULL) EXECUTE FUNCTION ck_internal.queue_timeout_local();

-- ck.distribute_queue refuses a queue with a timeout (0A000).
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
    SELECT q.dead_letters, q.lease, q.max_attempts, q.notify, q.timeout INTO config
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
    IF config.timeout IS NOT NULL THEN
        RAISE EXCEPTION 'queue % has a job timeout, which a distributed queue does not take', queue_name
            USING ERRCODE = 'feature_not_supported', HINT = 'Set its timeout in ck.queues to NULL first.';
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

-- Every queue gets the nullable column timeout_at, its attempt's deadline (nothing is
-- rewritten). A queue made by a 1.1.0 library before this update has it already; a user's column
-- of that name and another type stops the update (42701).
DO $$
DECLARE
    q pg_catalog.regclass;
    found_type pg_catalog.regtype;
BEGIN
    FOR q IN SELECT r.queue FROM ck.queues AS r JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) r.queue LOOP
        found_type := NULL;
        SELECT a.atttypid INTO found_type FROM pg_catalog.pg_attribute AS a
         WHERE a.attrelid OPERATOR(pg_catalog.=) q AND a.attname OPERATOR(pg_catalog.=) 'timeout_at' AND NOT a.attisdropped;
        CONTINUE WHEN found_type OPERATOR(pg_catalog.=) 'pg_catalog.timestamptz'::pg_catalog.regtype;
        IF found_type IS NOT NULL THEN
            RAISE EXCEPTION 'queue % already has a column named timeout_at', q
                USING ERRCODE = 'duplicate_column', HINT = 'Rename that column, then update the extension: 1.1.0 adds its own.';
        END IF;
        EXECUTE pg_catalog.format('ALTER TABLE %s ADD COLUMN timeout_at pg_catalog.timestamptz', q);
    END LOOP;
END
$$;

------------------------------------------------------------------------------------------
-- Bulk redrive and purge of dead letters by filter
------------------------------------------------------------------------------------------

-- ck.retry_dead and ck.purge_dead for every dead letter matching all the conditions given (NULL:
-- no condition), one batch per call, oldest first; rows another transaction holds are skipped.
CREATE FUNCTION ck.retry_dead_matching(queue regclass, last_error text DEFAULT NULL, error_like text DEFAULT NULL,
                                       older_than interval DEFAULT NULL, min_attempts integer DEFAULT NULL,
                                       payload_contains jsonb DEFAULT NULL, batch integer DEFAULT 1000)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_retry_dead_matching';
COMMENT ON FUNCTION ck.retry_dead_matching(regclass, text, text, interval, integer, jsonb, integer) IS
'puts up to batch dead jobs matching every condition given (last_error equal, last_error LIKE error_like, died more than older_than ago, attempts >= min_attempts, payload @> payload_contains) back in their queue, as ck.retry_dead, oldest first; one whose unique key another job holds stays dead; returns how many';

CREATE FUNCTION ck.purge_dead_matching(queue regclass, last_error text DEFAULT NULL, error_like text DEFAULT NULL,
                                       older_than interval DEFAULT NULL, min_attempts integer DEFAULT NULL,
                                       payload_contains jsonb DEFAULT NULL, batch integer DEFAULT 1000)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_purge_dead_matching';
COMMENT ON FUNCTION ck.purge_dead_matching(regclass, text, text, interval, integer, jsonb, integer) IS
'deletes up to batch dead letters matching every condition given (as ck.retry_dead_matching), oldest first; returns how many';

------------------------------------------------------------------------------------------
-- History of finished jobs, results, waiting for a job
------------------------------------------------------------------------------------------
