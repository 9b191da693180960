-- concurrency_kit 0.3.3 -> 0.3.4: ck.set_concurrency_limit counts the jobs of every key it
-- settles in one pass over the queue, after locking the keys' slot rows, instead of one count (a
-- whole read of the queue) per key: setting a default limit on a queue of 200,000 jobs and 1,000
-- keys took 45 s. What it does is unchanged.
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.3.4'" to load this file. \quit

-- Settles a key (or, for the default, every key of the queue without a limit of its own) under
-- its new limit: the keys' slot rows locked first, then the jobs of each key counted (one pass
-- over the queue for all keys), then as many parked jobs unparked as the limit leaves room for;
-- without a limit, all of them, and the slot rows go.
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
                                  ' FOR EACH STATEMENT EXECUTE FUNCTION ck.queue_left()', queue_name);
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
