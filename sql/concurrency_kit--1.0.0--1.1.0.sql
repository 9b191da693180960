-- concurrency_kit 1.0.0 -> 1.1.0: the queue in production (issue 47). Every 1.0.0 call keeps
-- its meaning; what is new is opt-in per queue. Every name schema-qualified, every function
-- SECURITY INVOKER (the control file's trusted = true).
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '1.1.0'" to load this file. \quit

------------------------------------------------------------------------------------------
-- Pause and resume
------------------------------------------------------------------------------------------
-- A paused queue's claims return nothing (claim_wait sleeps until the resume's commit or its
-- max_wait); nothing else changes: jobs keep their places, enqueues and acknowledgements go on.
-- The state is ck.queues.paused_at, or for one concurrency key its row of ck.paused_keys (below),
-- written by the queue's owner (row-level security, as ck.set_concurrency_limit). The pause waits,
-- bounded by lock_timeout, for the claims already in flight, so that no claim commits after it
-- (src/README.md, "Pause and resume").
ALTER TABLE ck.queues ADD COLUMN paused_at timestamptz;
COMMENT ON COLUMN ck.queues.paused_at IS 'since when the queue''s claims are paused (ck.pause_queue); NULL: not paused';

CREATE FUNCTION ck.pause_queue(queue regclass, concurrency_key text DEFAULT NULL)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_pause_queue';
COMMENT ON FUNCTION ck.pause_queue(regclass, text) IS
'pauses the queue''s claims (they return nothing; claim_wait sleeps), or only those of one concurrency_key (its jobs wait parked; ck.paused_keys), once the claims in flight have ended (waited for up to lock_timeout); running jobs finish, jobs keep their order; false when it was paused already; not on a distributed queue (0A000)';

CREATE FUNCTION ck.resume_queue(queue regclass, concurrency_key text DEFAULT NULL)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_resume_queue';
COMMENT ON FUNCTION ck.resume_queue(regclass, text) IS
'resumes a paused queue''s claims, or a paused concurrency_key''s (its jobs back in their order, under its limit); claim_wait callers wake at its commit; false when it was not paused';

-- ck.queue_stats gains a last column, paused: its result type changes, so it is made again (a
-- 1.0 call naming its columns reads what it read; SELECT * gets one column more, at the end).
DROP FUNCTION ck.queue_stats(regclass);
CREATE FUNCTION ck.queue_stats(queue regclass,
    OUT ready bigint, OUT scheduled bigint, OUT running bigint, OUT expired bigint, OUT dead bigint,
    OUT oldest_ready_age interval, OUT ready_estimated boolean, OUT paused boolean)
RETURNS record
LANGUAGE c STABLE PARALLEL RESTRICTED SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_queue_stats';
COMMENT ON FUNCTION ck.queue_stats(regclass) IS
'job counts: running, expired, scheduled and dead exact; ready exact up to 10,000, estimated beyond (ready_estimated); paused: claims are paused (ck.pause_queue)';

-- A paused concurrency key (ck.pause_queue(queue, key)): its row here. The key is held at a
-- limit of 0 as a full key is (src/README.md, "Pause of one key"): its jobs not leased are parked,
-- its row of ck.concurrency_slots (made if the key has no limit) counts its leased jobs against 0,
-- so enqueues park and departures free no slot for a parked job; its own limit in
-- ck.concurrency_limits is kept for the resume, which settles the key under it. Claims read the
-- paused keys with their plans and park a job of one they meet (a lease run out, a retry).
-- Anyone may read it; only the queue's owner may write it (row-level security, as ck.concurrency_limits).
CREATE TABLE ck.paused_keys (
    queue           regclass NOT NULL,
    concurrency_key text NOT NULL,
    paused_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (queue, concurrency_key)
);
COMMENT ON TABLE ck.paused_keys IS 'per queue, the concurrency keys whose claims are paused (ck.pause_queue(queue, key)) and since when';
ALTER TABLE ck.paused_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY paused_keys_read ON ck.paused_keys FOR SELECT USING (true);
CREATE POLICY paused_keys_owner ON ck.paused_keys FOR ALL
    USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'))
    WITH CHECK (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'));
-- A claim that parks a job of a paused key locks the key's row (FOR KEY SHARE: a resume waits for
-- it), which row security asks of an UPDATE policy: whoever may claim (UPDATE on the queue) may lock
-- it, and no one but the owner may change it.
CREATE POLICY paused_keys_claimer ON ck.paused_keys FOR UPDATE
    USING (pg_catalog.has_table_privilege(queue, 'UPDATE')) WITH CHECK (false);
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.paused_keys TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.paused_keys', '');

-- Settles a key whose row of ck.paused_keys was just made or removed (ck.pause_queue and
-- ck.resume_queue with a key; their checks done): its slot row made or locked first, then its jobs.
-- Paused: the jobs not leased parked (their run_at kept), the leased ones counted against 0.
-- Resumed: the key under its limit again (its own, else the queue's default), as
-- ck.set_concurrency_limit settles it, its first parked jobs back at their own run_at (so that
-- the key's jobs keep their order); without a limit all of them, and the slot row goes.
CREATE FUNCTION ck_internal.settle_paused_key(queue regclass, concurrency_key text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
DECLARE
    queue_name pg_catalog.text := (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, queue, 0)).identity;
    paused boolean;
    lim pg_catalog.int4;
    running pg_catalog.int8;
    moved pg_catalog.int8 := 0;
BEGIN
    INSERT INTO ck.concurrency_slots AS s VALUES (queue, concurrency_key, 0)
        ON CONFLICT ON CONSTRAINT concurrency_slots_pkey DO UPDATE SET free = s.free;
    paused := EXISTS (SELECT FROM ck.paused_keys AS p WHERE p.queue OPERATOR(pg_catalog.=) settle_paused_key.queue
                                                        AND p.concurrency_key OPERATOR(pg_catalog.=) settle_paused_key.concurrency_key);
    IF paused THEN
        EXECUTE pg_catalog.format('UPDATE %s AS j SET parked_run_at = j.run_at, run_at = ''infinity''::pg_catalog.timestamptz'
                                  ' WHERE j.concurrency_key OPERATOR(pg_catalog.=) $1 AND j.parked_run_at IS NULL AND j.lease_token IS NULL',
                                  queue_name) USING concurrency_key;
        lim := 0;
    ELSE
        lim := (SELECT l.max_running FROM ck.concurrency_limits AS l
                WHERE l.queue OPERATOR(pg_catalog.=) settle_paused_key.queue
                  AND (l.concurrency_key OPERATOR(pg_catalog.=) settle_paused_key.concurrency_key OR l.concurrency_key IS NULL)
                ORDER BY l.concurrency_key IS NULL LIMIT 1);
    END IF;
    IF lim IS NULL THEN
        EXECUTE pg_catalog.format('UPDATE %s AS j SET run_at = j.parked_run_at, parked_run_at = NULL'
                                  ' WHERE j.concurrency_key OPERATOR(pg_catalog.=) $1 AND j.parked_run_at IS NOT NULL AND j.waiting_for IS NULL',
                                  queue_name) USING concurrency_key;
        DELETE FROM ck.concurrency_slots AS s WHERE s.queue OPERATOR(pg_catalog.=) settle_paused_key.queue
            AND s.concurrency_key OPERATOR(pg_catalog.=) settle_paused_key.concurrency_key;
        RETURN;
    END IF;
    EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM %s AS j WHERE j.concurrency_key OPERATOR(pg_catalog.=) $1'
                              ' AND j.parked_run_at IS NULL', queue_name) INTO running USING concurrency_key;
    IF lim OPERATOR(pg_catalog.>) running THEN
        EXECUTE pg_catalog.format('WITH pick AS (SELECT p.id FROM %1$s AS p WHERE p.concurrency_key OPERATOR(pg_catalog.=) $1'
                                  '   AND p.parked_run_at IS NOT NULL AND p.waiting_for IS NULL ORDER BY p.priority, p.parked_run_at, p.id LIMIT $2 FOR UPDATE)'
                                  ' UPDATE %1$s AS j SET run_at = j.parked_run_at, parked_run_at = NULL FROM pick'
                                  ' WHERE j.id OPERATOR(pg_catalog.=) pick.id', queue_name)
            USING concurrency_key, lim OPERATOR(pg_catalog.-) running;
        GET DIAGNOSTICS moved = ROW_COUNT;
    END IF;
    UPDATE ck.concurrency_slots AS s SET free = (lim OPERATOR(pg_catalog.-) running OPERATOR(pg_catalog.-) moved)::pg_catalog.int4
        WHERE s.queue OPERATOR(pg_catalog.=) settle_paused_key.queue AND s.concurrency_key OPERATOR(pg_catalog.=) settle_paused_key.concurrency_key;
END
$$;
COMMENT ON FUNCTION ck_internal.settle_paused_key(regclass, text) IS
'ck.pause_queue and ck.resume_queue of one key: its jobs parked (paused) or settled under its limit again';

-- A queue's paused keys go with its registration (ck.drop_queue).
CREATE FUNCTION ck_internal.queue_paused_keys_dropped() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM ck.paused_keys AS p WHERE p.queue OPERATOR(pg_catalog.=) OLD.queue;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION ck_internal.queue_paused_keys_dropped() IS 'trigger on ck.queues: a queue''s paused keys go with its registration';
CREATE TRIGGER queue_paused_keys_dropped AFTER DELETE ON ck.queues
    FOR EACH ROW EXECUTE FUNCTION ck_internal.queue_paused_keys_dropped();

-- A queue with a paused key is not distributed: each shard claims on its worker, without it.
CREATE FUNCTION ck_internal.queue_paused_keys_distributed() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF EXISTS (SELECT FROM ck.paused_keys AS p WHERE p.queue OPERATOR(pg_catalog.=) NEW.queue) THEN
        RAISE EXCEPTION 'queue % has paused concurrency keys and cannot be distributed', NEW.queue USING ERRCODE = 'feature_not_supported',
            HINT = 'Resume them first with ck.resume_queue(queue, key).';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION ck_internal.queue_paused_keys_distributed() IS 'trigger on ck.distributed_queues: a queue with paused keys is not distributed (0A000)';
CREATE TRIGGER queue_paused_keys_distributed BEFORE INSERT ON ck.distributed_queues
    FOR EACH ROW EXECUTE FUNCTION ck_internal.queue_paused_keys_distributed();

-- ck.set_concurrency_limit leaves a paused key held at 0 (its new limit kept for the resume).
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
    held pg_catalog.text[];
    kl pg_catalog.int4;
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
    -- Paused keys (1.1.0, ck.pause_queue) stay held at 0, read once their rows are locked: their
    -- limit is kept for the resume.
    held := ARRAY(SELECT p.concurrency_key FROM ck.paused_keys AS p WHERE p.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue
                                                                     AND p.concurrency_key OPERATOR(pg_catalog.=) ANY (keys));
    IF lim IS NULL THEN
        EXECUTE pg_catalog.format('UPDATE %s AS j SET run_at = GREATEST(j.parked_run_at, pg_catalog.clock_timestamp()), parked_run_at = NULL'
                                  ' WHERE j.concurrency_key OPERATOR(pg_catalog.=) ANY ($1) AND NOT j.concurrency_key OPERATOR(pg_catalog.=) ANY ($2)'
                                  ' AND j.parked_run_at IS NOT NULL AND j.waiting_for IS NULL',
                                  queue_name) USING keys, held;
        DELETE FROM ck.concurrency_slots AS s WHERE s.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue
            AND s.concurrency_key OPERATOR(pg_catalog.=) ANY (keys) AND NOT s.concurrency_key OPERATOR(pg_catalog.=) ANY (held);
        IF pg_catalog.cardinality(held) OPERATOR(pg_catalog.=) 0 THEN
            RETURN;
        END IF;
        keys := held;
    END IF;
    -- The jobs of each key not parked, counted in one pass over the queue (a count per key read
    -- the whole queue once a key); then each key with room unparks its first parked jobs.
    FOR k, unparked IN EXECUTE pg_catalog.format(
        'SELECT u.k, pg_catalog.count(j.id) FROM pg_catalog.unnest($1) AS u(k)'
        ' LEFT JOIN %s AS j ON j.concurrency_key OPERATOR(pg_catalog.=) u.k AND j.parked_run_at IS NULL'
        ' GROUP BY u.k', queue_name) USING keys
    LOOP
        moved := 0;
        kl := CASE WHEN k OPERATOR(pg_catalog.=) ANY (held) THEN 0 ELSE lim END;
        IF kl OPERATOR(pg_catalog.>) unparked THEN
            EXECUTE pg_catalog.format('WITH pick AS (SELECT p.id FROM %1$s AS p WHERE p.concurrency_key OPERATOR(pg_catalog.=) $1'
                                      '   AND p.parked_run_at IS NOT NULL AND p.waiting_for IS NULL ORDER BY p.priority, p.parked_run_at, p.id LIMIT $2 FOR UPDATE)'
                                      ' UPDATE %1$s AS j SET run_at = GREATEST(j.parked_run_at, pg_catalog.clock_timestamp()), parked_run_at = NULL FROM pick'
                                      ' WHERE j.id OPERATOR(pg_catalog.=) pick.id', queue_name)
                USING k, kl OPERATOR(pg_catalog.-) unparked;
            GET DIAGNOSTICS moved = ROW_COUNT;
        END IF;
        UPDATE ck.concurrency_slots AS s SET free = (kl OPERATOR(pg_catalog.-) unparked OPERATOR(pg_catalog.-) moved)::pg_catalog.int4
            WHERE s.queue OPERATOR(pg_catalog.=) set_concurrency_limit.queue AND s.concurrency_key OPERATOR(pg_catalog.=) k;
    END LOOP;
END
$$;

------------------------------------------------------------------------------------------
-- Rate limits (and ck.try_rate for any SQL)
------------------------------------------------------------------------------------------

-- Rate keys (ck.try_rate, ck.rate): at most n calls counted in any window of length period. A
-- key's row keeps counters of sub-windows of a tenth of the period (the same size whatever n: the
-- columns width .. marks, src/rate/window.hpp); a call under the rate updates it in one UPDATE ...
-- WHERE, whose row lock holds until the caller's transaction ends, so only committed calls count
-- and concurrent calls of one key are counted one after the other. Keys are shared names, like
-- advisory-lock namespaces: every role may count calls of every key.
CREATE TABLE ck.rates (
    key    text PRIMARY KEY CHECK (octet_length(key) BETWEEN 1 AND 256),
    width  bigint NOT NULL,     -- the buckets' width in microseconds: ceil(period / 10)
    bucket bigint NOT NULL,     -- the latest bucket counted in (microseconds since 1970 / width)
    total  bigint NOT NULL,     -- calls ever counted
    marks  bigint[] NOT NULL    -- marks[k + 1]: calls counted before bucket - k began, k = 0..10
) WITH (fillfactor = 90);   -- room for its rows' next versions: a count is a HOT update, even a key's first
COMMENT ON TABLE ck.rates IS 'rate keys of ck.try_rate and ck.rate: the calls counted per key, in buckets of a tenth of the period';
GRANT SELECT, INSERT, UPDATE ON ck.rates TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.rates', '');

CREATE FUNCTION ck.try_rate(key text, n integer, period interval)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_rate';
COMMENT ON FUNCTION ck.try_rate(text, integer, interval) IS
'counts a call of key and returns true if fewer than n calls of it were counted in the last period, else false with nothing counted; a call counts once its transaction commits (the key''s row stays locked until then: a concurrent call of the key waits, as long as lock_timeout allows)';

CREATE FUNCTION ck.rate(key text, n integer, period interval)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_rate';
COMMENT ON FUNCTION ck.rate(text, integer, interval) IS
'ck.try_rate that raises CK007 (sqlstate_action: busy) when the key is at its rate, saying when the next call would be counted; returns true';

-- Queue rate limits (ck.set_rate_limit): claims start at most max_jobs jobs of one concurrency key
-- in any window of length period, across every worker, counting claims that commit. A NULL key
-- is the default for every key without a limit of its own, and the rate of the jobs without a
-- key (counted together). Anyone may read the limits; only the owner of a queue may set them
-- (row-level security, as ck.concurrency_limits).
CREATE TABLE ck.rate_limits (
    queue           regclass NOT NULL,
    concurrency_key text,
    max_jobs        integer NOT NULL CHECK (max_jobs >= 1),
    period          interval NOT NULL CHECK (period > '0'),
    CONSTRAINT rate_limits_key UNIQUE NULLS NOT DISTINCT (queue, concurrency_key)
);
COMMENT ON TABLE ck.rate_limits IS 'per queue and concurrency key (NULL: the default, and the jobs without a key), how many claims may start jobs of the key in any window of length period';
ALTER TABLE ck.rate_limits ENABLE ROW LEVEL SECURITY;
CREATE POLICY rate_limits_read ON ck.rate_limits FOR SELECT USING (true);
CREATE POLICY rate_limits_owner ON ck.rate_limits FOR ALL
    USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'))
    WITH CHECK (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.rate_limits TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.rate_limits', '');

-- The starts counted per rate-limited key, over up to 8 stripe rows (stripe i counts its share of
-- max_jobs: max_jobs / 8, one more for i < max_jobs % 8), so that claims of one key in flight
-- count on different rows: per stripe, its buckets of starts (as ck.rates keeps them) and the
-- moment up to which claims have put jobs over the rate off on it (booked). A claim locks the
-- stripe it counts on until it ends. Whoever may claim from a queue (UPDATE) may read and write
-- its keys' rows.
CREATE TABLE ck.rate_starts (
    queue           regclass NOT NULL,
    keyed           boolean NOT NULL,   -- false: the jobs without a key (concurrency_key '')
    concurrency_key text NOT NULL,
    stripe          integer NOT NULL,
    width           bigint NOT NULL,
    bucket          bigint NOT NULL,
    total           bigint NOT NULL,
    marks           bigint[] NOT NULL,
    booked          timestamptz,
    PRIMARY KEY (queue, keyed, concurrency_key, stripe)
) WITH (fillfactor = 90);   -- as ck.rates: a claim's count is a HOT update, even a key's first
COMMENT ON TABLE ck.rate_starts IS 'claims counted per queue, rate-limited concurrency key and stripe (its share of max_jobs), in buckets of a tenth of the period (as ck.rates), and how far jobs over the rate were put off';
ALTER TABLE ck.rate_starts ENABLE ROW LEVEL SECURITY;
CREATE POLICY rate_starts_claimer ON ck.rate_starts FOR ALL
    USING (pg_catalog.has_table_privilege(queue, 'UPDATE'))
    WITH CHECK (pg_catalog.has_table_privilege(queue, 'UPDATE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.rate_starts TO PUBLIC;

CREATE FUNCTION ck.set_rate_limit(queue regclass, concurrency_key text, max_jobs integer, period interval DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
DECLARE
    queue_name pg_catalog.text;
BEGIN
    IF queue IS NULL THEN
        RAISE EXCEPTION 'queue must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) queue) THEN
        RAISE EXCEPTION 'relation with OID % does not exist', queue::pg_catalog.oid USING ERRCODE = 'undefined_table';
    END IF;
    queue_name := (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, queue, 0)).identity;
    IF max_jobs IS NOT NULL AND max_jobs OPERATOR(pg_catalog.<) 1 THEN
        RAISE EXCEPTION 'max_jobs must be at least 1, got %', max_jobs USING ERRCODE = 'invalid_parameter_value',
            HINT = 'NULL removes the limit.';
    END IF;
    IF max_jobs IS NOT NULL AND period IS NULL THEN
        RAISE EXCEPTION 'period must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF max_jobs IS NOT NULL AND NOT (period OPERATOR(pg_catalog.>) '0'::pg_catalog.interval) THEN
        RAISE EXCEPTION 'period must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_jobs IS NOT NULL AND NOT pg_catalog.isfinite(period) THEN
        RAISE EXCEPTION 'period must be finite' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_jobs IS NOT NULL AND period OPERATOR(pg_catalog.>) '100 years'::pg_catalog.interval THEN
        RAISE EXCEPTION 'period must be at most 100 years' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT FROM ck.queues AS r WHERE r.queue OPERATOR(pg_catalog.=) set_rate_limit.queue) THEN
        RAISE EXCEPTION 'table % is not a queue', queue_name USING ERRCODE = 'wrong_object_type',
            HINT = 'Create queues with ck.create_queue().';
    END IF;
    IF NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class AS c
                                   WHERE c.oid OPERATOR(pg_catalog.=) queue), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', queue_name USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- Each shard of a distributed queue claims on its own worker: a rate across them would need a
    -- count shared by every worker's claims, which ck does not keep.
    IF EXISTS (SELECT FROM ck.distributed_queues AS d WHERE d.queue OPERATOR(pg_catalog.=) set_rate_limit.queue) THEN
        RAISE EXCEPTION 'ck.set_rate_limit on a distributed queue is not supported' USING ERRCODE = 'feature_not_supported',
            DETAIL = pg_catalog.format('Queue %s is distributed with Citus; its shards claim apart.', queue_name),
            HINT = 'Limit the rate of a queue that is not distributed, or call ck.try_rate in the job.';
    END IF;
    IF max_jobs IS NULL THEN
        DELETE FROM ck.rate_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) set_rate_limit.queue
            AND l.concurrency_key IS NOT DISTINCT FROM set_rate_limit.concurrency_key;
        -- The counts of the keys left without a limit go too.
        DELETE FROM ck.rate_starts AS s WHERE s.queue OPERATOR(pg_catalog.=) set_rate_limit.queue
            AND CASE WHEN set_rate_limit.concurrency_key IS NOT NULL
                     THEN s.keyed AND s.concurrency_key OPERATOR(pg_catalog.=) set_rate_limit.concurrency_key
                          AND NOT EXISTS (SELECT FROM ck.rate_limits AS d WHERE d.queue OPERATOR(pg_catalog.=) s.queue
                                                                           AND d.concurrency_key IS NULL)
                     ELSE NOT s.keyed OR NOT EXISTS (SELECT FROM ck.rate_limits AS o
                                                     WHERE o.queue OPERATOR(pg_catalog.=) s.queue
                                                       AND o.concurrency_key OPERATOR(pg_catalog.=) s.concurrency_key) END;
    ELSE
        INSERT INTO ck.rate_limits AS l VALUES (queue, concurrency_key, max_jobs, period)
            ON CONFLICT ON CONSTRAINT rate_limits_key DO UPDATE SET max_jobs = EXCLUDED.max_jobs, period = EXCLUDED.period;
    END IF;
    -- Claims read the queue's limits with its plans: a change of its row in ck.queues drops them
    -- (ck_internal.queues_changed) in every session, once this commits.
    UPDATE ck.queues AS r SET queue = r.queue WHERE r.queue OPERATOR(pg_catalog.=) set_rate_limit.queue;
END
$$;
COMMENT ON FUNCTION ck.set_rate_limit(regclass, text, integer, interval) IS
'claims start at most max_jobs jobs of the concurrency key (NULL: the default for every key, and the jobs without a key) in any window of length period, counting claims that commit; a job claimed over the rate is put off to when the key has room; NULL max_jobs removes the limit; 0A000 on a distributed queue';

-- A queue's rate limits and counts go with its registration (ck.drop_queue), so that a table
-- that takes its OID later does not inherit them.
CREATE FUNCTION ck_internal.queue_rates_dropped() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM ck.rate_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) OLD.queue;
    DELETE FROM ck.rate_starts AS s WHERE s.queue OPERATOR(pg_catalog.=) OLD.queue;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION ck_internal.queue_rates_dropped() IS 'trigger on ck.queues: a queue''s rate limits and counts go with its registration';
CREATE TRIGGER queue_rates_dropped AFTER DELETE ON ck.queues
    FOR EACH ROW EXECUTE FUNCTION ck_internal.queue_rates_dropped();

-- A queue with rate limits is not distributed: its shards would claim apart, each without them.
CREATE FUNCTION ck_internal.queue_rates_distributed() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF EXISTS (SELECT FROM ck.rate_limits AS l WHERE l.queue OPERATOR(pg_catalog.=) NEW.queue) THEN
        RAISE EXCEPTION 'queue % has rate limits and cannot be distributed', NEW.queue USING ERRCODE = 'feature_not_supported',
            HINT = 'Remove them first with ck.set_rate_limit(queue, key, NULL): a distributed queue takes no rate limits.';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION ck_internal.queue_rates_distributed() IS 'trigger on ck.distributed_queues: a queue with rate limits is not distributed (0A000)';
CREATE TRIGGER queue_rates_distributed BEFORE INSERT ON ck.distributed_queues
    FOR EACH ROW EXECUTE FUNCTION ck_internal.queue_rates_distributed();

COMMENT ON FUNCTION ck.sqlstate_action(text) IS
'what a client should do with an error: retry (40001, 40P01, CK006), busy (55P03, CK007), conflict (23505, 23P01, CK001-CK005) or error';

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
ALTER TABLE ck.queues ADD COLUMN history regclass, ADD COLUMN history_retention interval, ADD COLUMN history_period interval,
    ADD CONSTRAINT queues_history_check CHECK ((history_retention IS NULL) = (history_period IS NULL)
                                               AND (history_retention IS NULL OR history IS NOT NULL));

-- Opt-in per queue (ck.set_history): completed, buried and cancelled jobs are recorded in the
-- queue's history table by the statement that removes them from the queue. The table is
-- partitioned by finished_at, a partition per period, made ahead and dropped whole once
-- expired (ck.maintain_history); a default partition catches rows when maintenance is late.
-- The counts of each partition are kept here once its period has ended (sealed), so that
-- ck.history_counts reads a row per period and counts only the current one.
CREATE TABLE ck.history_partitions (
    queue      regclass NOT NULL REFERENCES ck.queues ON DELETE CASCADE,
    partition  regclass PRIMARY KEY,
    starts     timestamptz NOT NULL,
    ends       timestamptz NOT NULL,
    sealed     boolean NOT NULL DEFAULT false,
    completed  bigint,
    buried     bigint,
    cancelled  bigint
);
CREATE INDEX history_partitions_queue ON ck.history_partitions (queue, starts);
COMMENT ON TABLE ck.history_partitions IS 'partitions of the queues'' histories, by period; the counts per state of each once sealed';
ALTER TABLE ck.history_partitions ENABLE ROW LEVEL SECURITY;
CREATE POLICY history_partitions_read ON ck.history_partitions FOR SELECT
    USING (pg_catalog.has_table_privilege(queue, 'SELECT'));
CREATE POLICY history_partitions_owner ON ck.history_partitions FOR ALL
    USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'))
    WITH CHECK (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.history_partitions TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.history_partitions', '');

-- The checks every history function starts with: the queue is a registered queue of this
-- node (not distributed: 0A000), and, for what changes it, the caller owns it. Returns its
-- ck.queues row.
CREATE FUNCTION ck_internal.history_queue(queue regclass, owner boolean)
RETURNS ck.queues
LANGUAGE plpgsql STABLE PARALLEL SAFE SECURITY INVOKER
AS $$
DECLARE
    queue_name pg_catalog.text := (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, queue, 0)).identity;
    r ck.queues;
BEGIN
    IF queue IS NULL THEN
        RAISE EXCEPTION 'queue must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) queue) THEN
        RAISE EXCEPTION 'relation with OID % does not exist', queue::pg_catalog.oid USING ERRCODE = 'undefined_table';
    END IF;
    IF EXISTS (SELECT FROM ck.distributed_queues AS d WHERE d.queue OPERATOR(pg_catalog.=) history_queue.queue) THEN
        RAISE EXCEPTION 'queue % is distributed: the history of finished jobs is not supported there', queue_name
            USING ERRCODE = 'feature_not_supported';
    END IF;
    SELECT * INTO r FROM ck.queues AS q WHERE q.queue OPERATOR(pg_catalog.=) history_queue.queue;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % is not a queue', queue_name USING ERRCODE = 'wrong_object_type',
            HINT = 'Create queues with ck.create_queue().';
    END IF;
    IF owner AND NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class AS c
                                             WHERE c.oid OPERATOR(pg_catalog.=) queue), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', queue_name USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN r;
END
$$;
COMMENT ON FUNCTION ck_internal.history_queue(regclass, boolean) IS
'the ck.queues row of a queue that may have a history (not distributed), checking ownership if asked';

CREATE FUNCTION ck.set_history(queue regclass, retention interval, period interval DEFAULT NULL)
RETURNS regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
DECLARE
    r ck.queues := ck_internal.history_queue(queue, true);
    hist pg_catalog.regclass := r.history;
    schema_name pg_catalog.name;
    hist_name pg_catalog.text;
    n pg_catalog.int4 := 0;
BEGIN
    IF retention IS NULL THEN
        IF period IS NOT NULL THEN
            RAISE EXCEPTION 'a period without a retention' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'NULL retention turns the history off.';
        END IF;
        -- Off: the completions stop writing at this commit; the table and its rows stay.
        UPDATE ck.queues AS q SET history_retention = NULL, history_period = NULL
            WHERE q.queue OPERATOR(pg_catalog.=) set_history.queue;
        RETURN hist;
    END IF;
    IF NOT pg_catalog.isfinite(retention) OR retention OPERATOR(pg_catalog.<) interval '1 minute'
       OR retention OPERATOR(pg_catalog.>) interval '10 years' THEN
        RAISE EXCEPTION 'retention must be between 1 minute and 10 years, got %', retention
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF period IS NULL THEN
        -- The smallest usual period that keeps the partitions within retention to 200 at most.
        period := (SELECT p FROM pg_catalog.unnest('{1 minute,5 minutes,15 minutes,1 hour,6 hours,1 day,7 days,28 days}'::pg_catalog.interval[]) AS p
                   WHERE pg_catalog.date_part('epoch', retention) OPERATOR(pg_catalog./) pg_catalog.date_part('epoch', p)
                         OPERATOR(pg_catalog.<=) 200
                   ORDER BY p LIMIT 1);
    ELSIF NOT pg_catalog.isfinite(period) OR period OPERATOR(pg_catalog.<) interval '1 minute' OR period OPERATOR(pg_catalog.>) retention
          OR pg_catalog.date_part('epoch', retention) OPERATOR(pg_catalog./) pg_catalog.date_part('epoch', period)
             OPERATOR(pg_catalog.>) 1000 THEN
        RAISE EXCEPTION 'period must be between 1 minute and the retention, and at least a thousandth of it, got %', period
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF hist IS NULL OR NOT EXISTS (SELECT FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) hist) THEN
        SELECT n2.nspname, c.relname INTO schema_name, hist_name FROM pg_catalog.pg_class AS c
            JOIN pg_catalog.pg_namespace AS n2 ON n2.oid OPERATOR(pg_catalog.=) c.relnamespace WHERE c.oid OPERATOR(pg_catalog.=) queue;
        hist_name := pg_catalog.left(hist_name, 40) OPERATOR(pg_catalog.||) '_history';
        WHILE EXISTS (SELECT FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n2 ON n2.oid OPERATOR(pg_catalog.=) c.relnamespace
                      WHERE n2.nspname OPERATOR(pg_catalog.=) schema_name
                        AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY[hist_name, hist_name OPERATOR(pg_catalog.||) '_default'])) LOOP
            n := n OPERATOR(pg_catalog.+) 1;
            hist_name := pg_catalog.regexp_replace(hist_name, '[0-9]*$', '') OPERATOR(pg_catalog.||) n;
        END LOOP;
        EXECUTE pg_catalog.format('CREATE TABLE %I.%I (id pg_catalog.int8 NOT NULL, state pg_catalog.text NOT NULL,'
                                  ' attempts pg_catalog.int4 NOT NULL, error pg_catalog.text, result pg_catalog.jsonb,'
                                  ' payload pg_catalog.jsonb, enqueued_at pg_catalog.timestamptz, finished_at pg_catalog.timestamptz NOT NULL)'
                                  ' PARTITION BY RANGE (finished_at)', schema_name, hist_name);
        hist := pg_catalog.format('%I.%I', schema_name, hist_name)::pg_catalog.regclass;
        EXECUTE pg_catalog.format('CREATE INDEX ON %s (id)', hist);
        EXECUTE pg_catalog.format('COMMENT ON TABLE %s IS %L', hist,
                                  'concurrency_kit history of queue ' OPERATOR(pg_catalog.||) queue::pg_catalog.oid);
        -- Whoever may remove a queue's jobs writes their record (a worker completing a job needs
        -- no right beyond those on the queue); whoever may read the queue reads it. Rows go in
        -- through this table only: its partitions are the owner's.
        EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', hist);
        EXECUTE pg_catalog.format('CREATE POLICY ck_read ON %s FOR SELECT USING (pg_catalog.has_table_privilege(%s::pg_catalog.oid, %L))',
                                  hist, queue::pg_catalog.oid, 'SELECT');
        EXECUTE pg_catalog.format('CREATE POLICY ck_write ON %s FOR INSERT WITH CHECK (pg_catalog.has_table_privilege(%s::pg_catalog.oid, %L))',
                                  hist, queue::pg_catalog.oid, 'DELETE');
        EXECUTE pg_catalog.format('GRANT SELECT, INSERT ON %s TO PUBLIC', hist);
        EXECUTE pg_catalog.format('CREATE TABLE %I.%I PARTITION OF %s DEFAULT', schema_name,
                                  hist_name OPERATOR(pg_catalog.||) '_default', hist);
        -- The queue's owner owns them, whichever member of its role made them.
        EXECUTE pg_catalog.format('ALTER TABLE %s OWNER TO %I', hist, pg_catalog.pg_get_userbyid(
            (SELECT c.relowner FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) queue)));
        EXECUTE pg_catalog.format('ALTER TABLE %I.%I OWNER TO %I', schema_name, hist_name OPERATOR(pg_catalog.||) '_default',
            pg_catalog.pg_get_userbyid((SELECT c.relowner FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) queue)));
    END IF;
    UPDATE ck.queues AS q SET history = hist, history_retention = retention, history_period = period
        WHERE q.queue OPERATOR(pg_catalog.=) set_history.queue;
    PERFORM ck.maintain_history(queue);
    RETURN hist;
END
$$;
COMMENT ON FUNCTION ck.set_history(regclass, interval, interval) IS
'keeps the queue''s finished jobs (completed, buried, cancelled) for retention in its history table, partitioned by period (NULL: from the retention); NULL retention turns it off (the table stays); returns the table';

CREATE FUNCTION ck.maintain_history(queue regclass, OUT created integer, OUT sealed integer, OUT dropped integer)
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS $$
DECLARE
    r ck.queues := ck_internal.history_queue(queue, true);
    schema_name pg_catalog.name;
    hist_name pg_catalog.name;
    dflt pg_catalog.regclass;
    seconds pg_catalog.float8 := pg_catalog.date_part('epoch', r.history_period);
    starts pg_catalog.timestamptz;
    ends pg_catalog.timestamptz;
    last_end pg_catalog.timestamptz;
    latest pg_catalog.timestamptz;
    part_name pg_catalog.text;
    part record;
    counts pg_catalog.int8[];
BEGIN
    created := 0;
    sealed := 0;
    dropped := 0;
    IF r.history_retention IS NULL THEN
        RAISE EXCEPTION 'queue % keeps no history', queue USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'ck.set_history(queue, retention) turns it on.';
    END IF;
    IF pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.<>) 'read committed' THEN
        RAISE EXCEPTION 'ck.maintain_history needs READ COMMITTED' USING ERRCODE = 'active_sql_transaction',
            HINT = 'A partition is counted once the transactions writing into it have ended, which one snapshot would not see.';
    END IF;
    -- One maintenance of a queue at a time.
    PERFORM FROM ck.queues AS q WHERE q.queue OPERATOR(pg_catalog.=) maintain_history.queue FOR NO KEY UPDATE;
    SELECT n.nspname, c.relname INTO schema_name, hist_name FROM pg_catalog.pg_class AS c
        JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace WHERE c.oid OPERATOR(pg_catalog.=) r.history;
    dflt := (SELECT i.inhrelid::pg_catalog.regclass FROM pg_catalog.pg_inherits AS i JOIN pg_catalog.pg_class AS c
             ON c.oid OPERATOR(pg_catalog.=) i.inhrelid WHERE i.inhparent OPERATOR(pg_catalog.=) r.history
             AND c.relpartbound IS NOT NULL AND pg_catalog.pg_get_expr(c.relpartbound, c.oid) OPERATOR(pg_catalog.=) 'DEFAULT');

    -- Ahead: partitions up to two periods from now, from the last one's end or the current
    -- period. A partition cannot take over rows the default partition caught (maintenance was
    -- late): it starts after them. The default is locked first (only writes routed to it
    -- wait), so that none comes in between.
    last_end := (SELECT pg_catalog.max(p.ends) FROM ck.history_partitions AS p WHERE p.queue OPERATOR(pg_catalog.=) maintain_history.queue);
    starts := pg_catalog.to_timestamp(pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
                                                       OPERATOR(pg_catalog./) seconds) OPERATOR(pg_catalog.*) seconds);
    IF last_end IS NOT NULL AND last_end OPERATOR(pg_catalog.>) starts THEN
        starts := last_end;
    END IF;
    IF starts OPERATOR(pg_catalog.<) (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) (r.history_period OPERATOR(pg_catalog.*) 2))
       AND dflt IS NOT NULL THEN
        EXECUTE pg_catalog.format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', dflt);
        EXECUTE pg_catalog.format('SELECT pg_catalog.max(h.finished_at) FROM %s AS h WHERE h.finished_at OPERATOR(pg_catalog.>=) $1', dflt)
            INTO latest USING starts;
        IF latest IS NOT NULL THEN
            starts := pg_catalog.to_timestamp((pg_catalog.floor(pg_catalog.date_part('epoch', latest) OPERATOR(pg_catalog./) seconds)
                                               OPERATOR(pg_catalog.+) 1) OPERATOR(pg_catalog.*) seconds);
        END IF;
    END IF;
    WHILE starts OPERATOR(pg_catalog.<) (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) (r.history_period OPERATOR(pg_catalog.*) 2)) LOOP
        ends := pg_catalog.to_timestamp(pg_catalog.date_part('epoch', starts) OPERATOR(pg_catalog.+) seconds);
        part_name := pg_catalog.left(hist_name, 40) OPERATOR(pg_catalog.||) '_'
                     OPERATOR(pg_catalog.||) pg_catalog.to_char(starts AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS');
        -- Made apart and attached: ATTACH takes SHARE UPDATE EXCLUSIVE on the history, which
        -- completions writing into it do not wait for (CREATE TABLE ... PARTITION OF would).
        EXECUTE pg_catalog.format('CREATE TABLE %I.%I (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', schema_name, part_name, r.history);
        EXECUTE pg_catalog.format('ALTER TABLE %I.%I OWNER TO %I', schema_name, part_name, pg_catalog.pg_get_userbyid(
            (SELECT c.relowner FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) r.history)));
        EXECUTE pg_catalog.format('ALTER TABLE %s ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                                  r.history, schema_name, part_name, starts, ends);
        INSERT INTO ck.history_partitions (queue, partition, starts, ends)
            VALUES (queue, pg_catalog.format('%I.%I', schema_name, part_name)::pg_catalog.regclass, starts, ends);
        created := created OPERATOR(pg_catalog.+) 1;
        starts := ends;
    END LOOP;

    -- Sealed: a partition whose period ended (a minute ago: a statement that took its time
    -- before writing) is counted once the transactions writing into it have ended (SHARE waits
    -- for them; a short wait, else the next run).
    FOR part IN SELECT p.partition FROM ck.history_partitions AS p WHERE p.queue OPERATOR(pg_catalog.=) maintain_history.queue
                AND NOT p.sealed AND p.ends OPERATOR(pg_catalog.<=) (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) interval '1 minute')
                ORDER BY p.starts LOOP
        BEGIN
            PERFORM pg_catalog.set_config('lock_timeout', '200ms', true);
            EXECUTE pg_catalog.format('LOCK TABLE %s IN SHARE MODE', part.partition);
            EXECUTE pg_catalog.format('SELECT ARRAY[pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) %L),'
                                      ' pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) %L),'
                                      ' pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) %L)] FROM %s AS h',
                                      'completed', 'buried', 'cancelled', part.partition) INTO counts;
            UPDATE ck.history_partitions AS p SET sealed = true, completed = counts[1], buried = counts[2], cancelled = counts[3]
                WHERE p.partition OPERATOR(pg_catalog.=) part.partition;
            sealed := sealed OPERATOR(pg_catalog.+) 1;
        EXCEPTION WHEN lock_not_available THEN
            NULL;   -- a writer is still open: sealed by a later run
        END;
    END LOOP;

    -- Expired: a partition whose period ended retention ago is dropped whole. DROP locks the
    -- history itself (ACCESS EXCLUSIVE), which completions wait for: a short wait (200 ms),
    -- else the next run.
    FOR part IN SELECT p.partition FROM ck.history_partitions AS p WHERE p.queue OPERATOR(pg_catalog.=) maintain_history.queue
                AND p.ends OPERATOR(pg_catalog.<=) (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) r.history_retention)
                ORDER BY p.starts LOOP
        BEGIN
            PERFORM pg_catalog.set_config('lock_timeout', '200ms', true);
            DELETE FROM ck.history_partitions AS p WHERE p.partition OPERATOR(pg_catalog.=) part.partition;
            EXECUTE pg_catalog.format('DROP TABLE %s', part.partition);
            dropped := dropped OPERATOR(pg_catalog.+) 1;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
    -- Rows the default partition caught go row by row (it holds few: only while maintenance is late).
    IF dflt IS NOT NULL THEN
        EXECUTE pg_catalog.format('DELETE FROM %s AS h WHERE h.finished_at OPERATOR(pg_catalog.<) (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) $1)', dflt)
            USING r.history_retention;
    END IF;
END
$$;
COMMENT ON FUNCTION ck.maintain_history(regclass) IS
'the history''s partitions: made two periods ahead, counted once their period has ended, dropped once it ended retention ago; run it every period (pg_cron) as the queue''s owner';

CREATE FUNCTION ck.history_counts(queue regclass, since timestamptz DEFAULT NULL)
RETURNS TABLE (period_start timestamptz, period_end timestamptz, state text, jobs bigint)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED SECURITY INVOKER
AS $$
DECLARE
    r ck.queues := ck_internal.history_queue(queue, false);
    seconds pg_catalog.float8 := pg_catalog.date_part('epoch', r.history_period);
    part record;
    counts pg_catalog.int8[];
    dflt pg_catalog.regclass;
BEGIN
    IF r.history IS NULL THEN
        RAISE EXCEPTION 'queue % keeps no history', queue USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'ck.set_history(queue, retention) turns it on.';
    END IF;
    -- Sealed periods: the counts kept when they were sealed.
    RETURN QUERY SELECT p.starts, p.ends, s.state, s.n FROM ck.history_partitions AS p,
        LATERAL (VALUES ('completed'::pg_catalog.text, p.completed), ('buried', p.buried), ('cancelled', p.cancelled)) AS s(state, n)
        WHERE p.queue OPERATOR(pg_catalog.=) history_counts.queue AND p.sealed AND s.n OPERATOR(pg_catalog.>) 0
          AND (since IS NULL OR p.ends OPERATOR(pg_catalog.>) since)
        ORDER BY p.starts, s.state;
    -- The others (the current period): counted now, through the history (pruned to the one
    -- partition), in one pass of three counts as the seal counts (a GROUP BY sorted or hashed
    -- every row: twice the time at 10 million rows, test/bench/results-1.1.0-history-pg18.md).
    FOR part IN SELECT p.starts, p.ends FROM ck.history_partitions AS p WHERE p.queue OPERATOR(pg_catalog.=) history_counts.queue
                AND NOT p.sealed AND p.starts OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()
                AND (since IS NULL OR p.ends OPERATOR(pg_catalog.>) since) ORDER BY p.starts LOOP
        EXECUTE pg_catalog.format('SELECT ARRAY[pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) %L),'
                                  ' pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) %L),'
                                  ' pg_catalog.count(*) FILTER (WHERE h.state OPERATOR(pg_catalog.=) %L)] FROM %s AS h'
                                  ' WHERE h.finished_at OPERATOR(pg_catalog.>=) $1 AND h.finished_at OPERATOR(pg_catalog.<) $2',
                                  'buried', 'cancelled', 'completed', r.history) INTO counts USING part.starts, part.ends;
        RETURN QUERY SELECT part.starts, part.ends, s.state, s.n
            FROM (VALUES ('buried'::pg_catalog.text, counts[1]), ('cancelled', counts[2]), ('completed', counts[3])) AS s(state, n)
            WHERE s.n OPERATOR(pg_catalog.>) 0;
    END LOOP;
    -- Rows the default partition caught, by period (pg_partitioned_table names it: no bound of
    -- every partition deparsed at each call).
    dflt := (SELECT CASE WHEN t.partdefid OPERATOR(pg_catalog.<>) 0 THEN t.partdefid::pg_catalog.regclass END
             FROM pg_catalog.pg_partitioned_table AS t
             WHERE t.partrelid OPERATOR(pg_catalog.=) r.history);
    IF dflt IS NOT NULL THEN
        RETURN QUERY EXECUTE pg_catalog.format('SELECT f.s, f.s OPERATOR(pg_catalog.+) $2, f.state, pg_catalog.count(*) FROM (SELECT'
            ' pg_catalog.to_timestamp(pg_catalog.floor(pg_catalog.date_part(%L, h.finished_at) OPERATOR(pg_catalog./) $1) OPERATOR(pg_catalog.*) $1) AS s,'
            ' h.state FROM %s AS h WHERE $3 IS NULL OR h.finished_at OPERATOR(pg_catalog.>=) $3) AS f GROUP BY f.s, f.state ORDER BY f.s, f.state',
            'epoch', dflt) USING seconds, r.history_period, since;
    END IF;
END
$$;
COMMENT ON FUNCTION ck.history_counts(regclass, timestamptz) IS
'finished jobs per period and state (completed, buried, cancelled) since a moment (NULL: all kept): sealed periods from their kept counts, the current one counted';

CREATE FUNCTION ck.job(queue regclass, id bigint,
    OUT state text, OUT attempts integer, OUT error text, OUT result jsonb, OUT enqueued_at timestamptz, OUT finished_at timestamptz)
RETURNS record
LANGUAGE c STABLE PARALLEL RESTRICTED SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_job';
COMMENT ON FUNCTION ck.job(regclass, bigint) IS
'where a job is: waiting or running (in the queue), completed, buried or cancelled (its history record, else its dead letter), gone (finished, no record kept) or unknown (never enqueued)';

CREATE FUNCTION ck.await_job(queue regclass, id bigint, max_wait interval DEFAULT '30 seconds',
    OUT state text, OUT result jsonb, OUT error text)
RETURNS record
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_await_job';
COMMENT ON FUNCTION ck.await_job(regclass, bigint, interval) IS
'waits up to max_wait until the job has finished, woken by the commit that finishes it; returns its state as ck.job says it (waiting or running when max_wait ran out), with its result or error';

-- Acknowledgements with a result, kept in the history. Overloads rather than a parameter with a
-- default: the 1.0 functions keep their identity (whatever depends on them survives the update),
-- and a call with the 1.0 arguments, typed or not, can reach only the 1.0 function.
CREATE FUNCTION ck.complete(queue regclass, id bigint, lease_token bigint, result jsonb)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_complete';
COMMENT ON FUNCTION ck.complete(regclass, bigint, bigint, jsonb) IS
'ck.complete with the job''s result, kept in the queue''s history (ck.set_history; without one it is not kept)';

CREATE FUNCTION ck.try_complete(queue regclass, id bigint, lease_token bigint, result jsonb)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_complete';
COMMENT ON FUNCTION ck.try_complete(regclass, bigint, bigint, jsonb) IS
'ck.try_complete with the job''s result, kept in the queue''s history';

-- Every argument given: with batch and lease defaulted, a 1.0 call with an untyped fourth
-- argument (a driver's parameter) would not know which function it means.
CREATE FUNCTION ck.complete_and_claim(queue regclass, id bigint, lease_token bigint, batch integer,
                                      lease interval, result jsonb)
RETURNS TABLE (id bigint, lease_token bigint, attempts integer, payload jsonb, lease_until timestamptz)
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1
AS 'MODULE_PATHNAME', 'ck_complete_and_claim';
COMMENT ON FUNCTION ck.complete_and_claim(regclass, bigint, bigint, integer, interval, jsonb) IS
'ck.complete_and_claim with the completed job''s result, kept in the queue''s history';

CREATE FUNCTION ck.complete_many(queue regclass, ids bigint[], lease_tokens bigint[], results jsonb[])
RETURNS SETOF bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_complete_many';
COMMENT ON FUNCTION ck.complete_many(regclass, bigint[], bigint[], jsonb[]) IS
'ck.complete_many with results[i] for ids[i], kept in the queue''s history';

CREATE FUNCTION ck.try_complete_many(queue regclass, ids bigint[], lease_tokens bigint[], results jsonb[])
RETURNS SETOF bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_complete_many';
COMMENT ON FUNCTION ck.try_complete_many(regclass, bigint[], bigint[], jsonb[]) IS
'ck.try_complete_many with results[i] for ids[i], kept in the queue''s history';

-- Race audit (issue 48): ck.race_audit
-- PARALLEL UNSAFE like ck.lock_audit: each function is analysed in a subtransaction.
CREATE FUNCTION ck.race_audit(schema name DEFAULT NULL)
RETURNS TABLE(func regprocedure, kind text, read_statement text, write_statement text, rule text, fix text)
LANGUAGE c STABLE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_race_audit';
COMMENT ON FUNCTION ck.race_audit(name) IS
'read-decide-write races in SQL and PL/pgSQL functions and procedures: lost_update (an unlocked read whose value a later UPDATE of the same table writes back, with no re-check in its WHERE) and write_skew (an unlocked check of a table guarding an INSERT into it that no unique or exclusion constraint covers, or an UPDATE decided on a count or EXISTS); each row names the two statements, the rule and the fix; functions set to SERIALIZABLE are skipped; a body that cannot be analysed gives a row saying so; all non-system schemas but ck when schema is NULL';

-- The race detector (1.1.0, issue 48). ck.race_detector (off, log, warning, error), a setting
-- of the library, makes the planner put ck_internal.race_check into each UPDATE that
-- overwrites columns without a guard (src/races/overwrite.cpp); it reports a row another
-- transaction changed after this one read the table without a lock. Reports are kept in a
-- ring of the shared state, read with ck.race_reports.
CREATE FUNCTION ck_internal.race_check(tbl regclass, row_xmin xid, row_ctid tid, write_statement text, columns text)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_race_check';
COMMENT ON FUNCTION ck_internal.race_check(regclass, xid, tid, text, text) IS
'internal, put by the planner into UPDATE statements that overwrite columns while ck.race_detector is on: reports a row changed by another transaction after this one read the table without a lock (CK008 at ''error''); always true';

CREATE FUNCTION ck.race_reports()
RETURNS TABLE(reported_at timestamptz, pid integer, role name, table_name text, row_key text, overwritten text,
              changed_by xid, read_statement text, write_statement text, level text)
LANGUAGE c VOLATILE PARALLEL RESTRICTED SECURITY INVOKER ROWS 20
AS 'MODULE_PATHNAME', 'ck_race_reports';
COMMENT ON FUNCTION ck.race_reports() IS
'the lost updates ck.race_detector reported in this database, oldest first (the latest 128 of the server, since the shared state appeared or ck.race_reports_reset): when, the backend and role, the table and row, the columns overwritten, the transaction whose change was lost, the unlocked read and the write; the key and statements only for roles allowed to see that role''s (its members, pg_read_all_stats)';

CREATE FUNCTION ck.race_reports_reset()
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_race_reports_reset';
REVOKE EXECUTE ON FUNCTION ck.race_reports_reset() FROM PUBLIC;
COMMENT ON FUNCTION ck.race_reports_reset() IS
'forgets every report ck.race_reports shows, of every database; how many there were. Superusers only unless granted';
