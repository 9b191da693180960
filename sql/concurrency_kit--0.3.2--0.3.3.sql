-- concurrency_kit 0.3.2 -> 0.3.3: calls of a distributed queue on any node of the Citus cluster,
-- not only on the coordinator (every node holding a shard learns the queue's distribution).
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.3.3'" to load this file. \quit

-- On every node that holds a shard of a queue being distributed (and on the coordinator): the
-- queue's row of ck.distributed_queues there, so that queue calls made on that node route to
-- the shards as the coordinator's do (0.3.3). A node that does not know the distributed table
-- (Citus without metadata on the workers) gets no row: calls go through the coordinator.
CREATE FUNCTION ck.register_distributed_queue(queue text, parts integer[], shards text[])
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
DECLARE
    rel pg_catalog.regclass := pg_catalog.to_regclass(queue);
BEGIN
    IF queue IS NULL OR parts IS NULL OR shards IS NULL THEN
        RAISE EXCEPTION 'queue, parts and shards must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.cardinality(parts) OPERATOR(pg_catalog.=) 0
       OR pg_catalog.cardinality(parts) OPERATOR(pg_catalog.<>) pg_catalog.cardinality(shards) THEN
        RAISE EXCEPTION 'parts and shards must name the same shards, one each (got % and %)',
            pg_catalog.cardinality(parts), pg_catalog.cardinality(shards) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF rel IS NOT NULL THEN
        INSERT INTO ck.distributed_queues (queue, parts, shards)
        VALUES (rel, register_distributed_queue.parts, register_distributed_queue.shards)
        ON CONFLICT ON CONSTRAINT distributed_queues_pkey DO NOTHING;
    END IF;
END
$$;
COMMENT ON FUNCTION ck.register_distributed_queue(text, integer[], text[]) IS
'internal, run by ck.distribute_queue on every node holding a shard and on the coordinator: the queue''s row of ck.distributed_queues there, so that calls on that node route to the shards';

-- ck.distribute_queue registers the distribution on every node holding a shard.
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
        EXECUTE pg_catalog.format('SELECT ck.attach_queue_shard($2::pg_catalog.regclass, $3::pg_catalog.regclass, $1, %s, %s, %s, %L, %s),'
                                  ' ck.register_distributed_queue(%L, $4, $5)'
                                  ' FROM (SELECT pg_catalog.count(*) FROM %s WHERE part OPERATOR(pg_catalog.=) $1 AND id OPERATOR(pg_catalog.=) 0) AS s',
                                  i OPERATOR(pg_catalog.-) 1, n, first_id, config.lease, config.max_attempts, queue_name, queue_name)
        USING parts[i], shards[i], dead_shards[i], parts, shards;
    END LOOP;
    PERFORM ck.register_distributed_queue(queue_name, parts, shards);
END
$$;
COMMENT ON FUNCTION ck.distribute_queue(regclass, integer) IS
'on a Citus cluster: distributes a queue (and its dead letters) over the workers; every queue call above keeps working on it, each touching one shard';

-- ck.detach_queue_shard (run by ck.drop_queue) removes that registration again.
CREATE OR REPLACE FUNCTION ck.detach_queue_shard(shard regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
BEGIN
    DELETE FROM ck.queues AS q WHERE q.queue OPERATOR(pg_catalog.=) shard;
    DELETE FROM ck.unique_windows AS w WHERE w.queue OPERATOR(pg_catalog.=) shard;
    DELETE FROM ck.concurrency_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) shard;
    DELETE FROM ck.concurrency_slots AS s WHERE s.queue OPERATOR(pg_catalog.=) shard;
    -- The distributed queue's row of this node (0.3.3), which lists the shard.
    DELETE FROM ck.distributed_queues AS d
    WHERE shard OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.to_regclass(n) FROM pg_catalog.unnest(d.shards) AS n);
END
$$;
COMMENT ON FUNCTION ck.detach_queue_shard(regclass) IS
'internal, run by ck.drop_queue on the worker holding a shard of a distributed queue: removes the shard''s registrations there, the queue''s row of ck.distributed_queues among them';
