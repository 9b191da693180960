-- concurrency_kit 0.3.1 -> 0.3.2: queues distributed over a Citus cluster (ck.distribute_queue)
-- and the calls that check a Citus deployment.
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.3.2'" to load this file. \quit

-- Distributed queues (0.3.2): a queue distributed over a Citus cluster by ck.distribute_queue.
-- Each shard of the queue is a queue of its own on the worker that holds it (registered in that
-- worker's ck.queues, with its triggers, claim frontier and unique index); the coordinator's
-- functions send each call to one shard (src/queue_distributed.cpp). A job's shard is known
-- from its id: ids of shard i are i modulo the shard count.
CREATE TABLE ck.distributed_queues (
    queue      regclass PRIMARY KEY,
    -- parts[i + 1]: a value of the distribution column "part" that Citus places in shard i
    parts      integer[] NOT NULL,
    -- shards[i + 1]: the name of shard i on its worker (schema-qualified)
    shards     text[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ck.distributed_queues IS 'queues distributed over a Citus cluster by ck.distribute_queue: the value of column part and the name of each shard';
ALTER TABLE ck.distributed_queues ENABLE ROW LEVEL SECURITY;
CREATE POLICY distributed_queues_read ON ck.distributed_queues FOR SELECT USING (true);
CREATE POLICY distributed_queues_owner ON ck.distributed_queues FOR ALL
    USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) queue), 'USAGE'))
    WITH CHECK (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) queue), 'USAGE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.distributed_queues TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.distributed_queues', '');

-- On the worker that holds it, makes a shard of a queue being distributed a queue of its own:
-- ids i modulo shard_count from first_id on, column part at its value, the unique index and
-- the triggers that Citus does not take on the distributed table, and its row in ck.queues.
-- Called by ck.distribute_queue through a statement routed to that shard.
CREATE FUNCTION ck.attach_queue_shard(shard regclass, dead_shard regclass, part integer, shard_index integer,
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
                              ' FOR EACH STATEMENT EXECUTE FUNCTION ck.queue_ready()', s);
    EXECUTE pg_catalog.format('CREATE TRIGGER ck_changed BEFORE UPDATE OR DELETE ON %s'
                              ' FOR EACH STATEMENT EXECUTE FUNCTION ck.queue_changed()', s);
    EXECUTE pg_catalog.format('CREATE TRIGGER ck_dependency_left AFTER DELETE ON %s FOR EACH ROW'
                              ' WHEN (OLD.has_dependants) EXECUTE FUNCTION ck.queue_dependency_left()', s);
    INSERT INTO ck.queues (queue, dead_letters, lease, max_attempts, notify)
    VALUES (shard, dead_shard, attach_queue_shard.lease, attach_queue_shard.max_attempts, false);
END
$$;
COMMENT ON FUNCTION ck.attach_queue_shard(regclass, regclass, integer, integer, integer, bigint, interval, integer) IS
'internal, run by ck.distribute_queue on the worker holding a shard: makes the shard a queue of its own there';

CREATE FUNCTION ck.distribute_queue(queue regclass, shard_count integer DEFAULT NULL)
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
        -- Routed by part to the worker holding shard i (the same statement as the coordinator's calls).
        EXECUTE pg_catalog.format('SELECT ck.attach_queue_shard($2::pg_catalog.regclass, $3::pg_catalog.regclass, $1, %s, %s, %s, %L, %s)'
                                  ' FROM (SELECT pg_catalog.count(*) FROM %s WHERE part OPERATOR(pg_catalog.=) $1 AND id OPERATOR(pg_catalog.=) 0) AS s',
                                  i OPERATOR(pg_catalog.-) 1, n, first_id, config.lease, config.max_attempts, queue_name)
        USING parts[i], shards[i], dead_shards[i];
    END LOOP;
    INSERT INTO ck.distributed_queues (queue, parts, shards) VALUES (distribute_queue.queue, parts, shards);
END
$$;
COMMENT ON FUNCTION ck.distribute_queue(regclass, integer) IS
'on a Citus cluster: distributes a queue (and its dead letters) over the workers; every queue call above keeps working on it, each touching one shard';

-- set_concurrency_limit on a distributed queue sets the limit on every shard.
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

-- drop_queue on a distributed queue removes its shards' registrations on the workers.
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
        EXECUTE pg_catalog.format('SELECT ck.detach_queue_shard($2::pg_catalog.regclass) FROM (SELECT pg_catalog.count(*)'
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

-- On the worker that holds it, the registrations of a shard of a queue being dropped.
CREATE FUNCTION ck.detach_queue_shard(shard regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
BEGIN
    DELETE FROM ck.queues AS q WHERE q.queue OPERATOR(pg_catalog.=) shard;
    DELETE FROM ck.unique_windows AS w WHERE w.queue OPERATOR(pg_catalog.=) shard;
    DELETE FROM ck.concurrency_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) shard;
    DELETE FROM ck.concurrency_slots AS s WHERE s.queue OPERATOR(pg_catalog.=) shard;
END
$$;
COMMENT ON FUNCTION ck.detach_queue_shard(regclass) IS
'internal, run by ck.drop_queue on the worker holding a shard of a distributed queue: removes the shard''s registrations there';
