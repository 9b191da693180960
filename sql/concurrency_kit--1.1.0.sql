-- concurrency_kit 1.1.0: install script. Every function runs as the caller (SECURITY
-- INVOKER); tables are regclass, columns name. No function carries a SET clause: everything
-- the extension runs is immune to the caller's search_path by construction (relations
-- printed from their OIDs, operators written OPERATOR(pg_catalog.op) or the type's own
-- equality operator found in the catalog, functions and types schema-qualified; SQL bodies
-- are BEGIN ATOMIC, bound when this script runs). A user's triggers on the tables the
-- extension writes run with the user's own search_path.
\echo Use "CREATE EXTENSION concurrency_kit" to load this file. \quit

-- Every function runs with the caller's rights, so using the schema grants nothing more
-- than the caller already has.
GRANT USAGE ON SCHEMA ck TO PUBLIC;

-- Internals: trigger functions, Citus plumbing and what only the extension calls, out of the
-- view of \df ck.* (which is the API). Callers need USAGE: the triggers of their queues and
-- ck's own functions run these with the caller's rights.
CREATE SCHEMA ck_internal;
GRANT USAGE ON SCHEMA ck_internal TO PUBLIC;

-- trusted = true (concurrency_kit.control): this script runs as the bootstrap superuser when a
-- database owner installs. Names it does not qualify are looked up in ck (then pg_catalog, first,
-- and pg_temp, last), so ck must hold nothing another role put there: it must have been made by
-- this CREATE EXTENSION (in this transaction, as ck_internal just was), or belong to a
-- superuser, and it must be empty.
DO $guard$
DECLARE
    ck_oid pg_catalog.oid := (SELECT n.oid FROM pg_catalog.pg_namespace AS n WHERE n.nspname OPERATOR(pg_catalog.=) 'ck');
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_namespace AS n, pg_catalog.pg_namespace AS i, pg_catalog.pg_roles AS r
                   WHERE n.oid OPERATOR(pg_catalog.=) ck_oid AND i.nspname OPERATOR(pg_catalog.=) 'ck_internal'
                     AND r.oid OPERATOR(pg_catalog.=) n.nspowner AND (n.xmin OPERATOR(pg_catalog.=) i.xmin OR r.rolsuper))
       OR EXISTS (SELECT FROM pg_catalog.pg_class AS c WHERE c.relnamespace OPERATOR(pg_catalog.=) ck_oid)
       OR EXISTS (SELECT FROM pg_catalog.pg_proc AS f WHERE f.pronamespace OPERATOR(pg_catalog.=) ck_oid)
       OR EXISTS (SELECT FROM pg_catalog.pg_type AS t WHERE t.typnamespace OPERATOR(pg_catalog.=) ck_oid)
       OR EXISTS (SELECT FROM pg_catalog.pg_operator AS o WHERE o.oprnamespace OPERATOR(pg_catalog.=) ck_oid)
       OR EXISTS (SELECT FROM pg_catalog.pg_collation AS l WHERE l.collnamespace OPERATOR(pg_catalog.=) ck_oid)
       OR EXISTS (SELECT FROM pg_catalog.pg_conversion AS v WHERE v.connamespace OPERATOR(pg_catalog.=) ck_oid) THEN
        RAISE EXCEPTION 'schema ck already exists, with objects in it or owned by a role that is not a superuser'
            USING ERRCODE = 'duplicate_schema',
                  HINT = 'CREATE EXTENSION concurrency_kit makes schema ck: drop the old one first (DROP SCHEMA ck, after DROP EXTENSION concurrency_kit).';
    END IF;
END
$guard$;

------------------------------------------------------------------------------------------
-- Conditional change: one UPDATE ... WHERE <condition> per call
------------------------------------------------------------------------------------------

-- (table, key, column, values, options). The key is "any": an unknown literal 'A1' is read as
-- the key column's type, another type is compared as the key column's (or refused, 42804).
-- The plain name raises when nothing changed, the try_ form returns NULL (false) instead.
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

------------------------------------------------------------------------------------------
-- Errors, timeouts, retries
------------------------------------------------------------------------------------------

CREATE FUNCTION ck.sqlstate_action(sqlstate text)
RETURNS text
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_sqlstate_action';
COMMENT ON FUNCTION ck.sqlstate_action(text) IS
'what a client should do with an error: retry (40001, 40P01), busy (55P03), conflict (23505, 23P01, CK001-CK005) or error';

------------------------------------------------------------------------------------------
-- Queues with leases (FOR UPDATE SKIP LOCKED)
------------------------------------------------------------------------------------------

-- Lease tokens: every claim takes a new one, so an acknowledgement carrying an old token
-- can be told apart from the current holder's.
CREATE SEQUENCE ck.lease_tokens;
GRANT USAGE ON SEQUENCE ck.lease_tokens TO PUBLIC;

-- The registry of queues made by ck.create_queue, with their settings. Anyone may read it;
-- only the owner of a queue's table may register, change or remove its row.
CREATE TABLE ck.queues (
    queue        regclass PRIMARY KEY,
    dead_letters regclass NOT NULL,
    -- finite too: PostgreSQL 17+ has an interval 'infinity', which is > '0' (0.2.1)
    lease        interval NOT NULL CONSTRAINT queues_lease_check
                     CHECK (lease > interval '0' AND pg_catalog.isfinite(lease)),
    max_attempts integer NOT NULL CHECK (max_attempts BETWEEN 1 AND 1000),
    notify       boolean NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    paused_at    timestamptz,  -- 1.1.0: since when claims are paused (ck.pause_queue); NULL: not paused
    timeout      interval CONSTRAINT queues_timeout_check
                     CHECK (timeout > interval '0' AND pg_catalog.isfinite(timeout)),
    -- 1.1.0: the history of finished jobs (ck.set_history): its table (kept when turned off),
    -- how long rows are kept (NULL: off) and the period of a partition
    history           regclass,
    history_retention interval,
    history_period    interval,
    CONSTRAINT queues_history_check CHECK ((history_retention IS NULL) = (history_period IS NULL)
                                           AND (history_retention IS NULL OR history IS NOT NULL))
);
COMMENT ON TABLE ck.queues IS 'queues made by ck.create_queue: dead-letter table, default lease, max attempts';
ALTER TABLE ck.queues ENABLE ROW LEVEL SECURITY;
CREATE POLICY queues_read ON ck.queues FOR SELECT USING (true);
CREATE POLICY queues_owner ON ck.queues FOR ALL
    USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'))
    WITH CHECK (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = queue), 'USAGE'));
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.queues TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.queues', '');

CREATE FUNCTION ck_internal.queues_changed() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'ck_queues_changed';
COMMENT ON FUNCTION ck_internal.queues_changed() IS
'trigger on ck.queues: drops the plans cached from a queue''s old settings';
CREATE TRIGGER queues_changed AFTER UPDATE OR DELETE ON ck.queues
    FOR EACH ROW EXECUTE FUNCTION ck_internal.queues_changed();

CREATE FUNCTION ck_internal.notify_queue() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER
AS $$
BEGIN
    PERFORM pg_catalog.pg_notify(pg_catalog.concat(TG_TABLE_SCHEMA, '.', TG_TABLE_NAME), '');
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION ck_internal.notify_queue() IS
'statement trigger of queues made with notify => true: NOTIFY "schema.queue" once per inserting statement';

CREATE FUNCTION ck_internal.queue_ready() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'ck_queue_ready';
COMMENT ON FUNCTION ck_internal.queue_ready() IS
'statement trigger of every queue (AFTER INSERT, REFERENCING NEW TABLE): wakes the queue''s ck.claim_wait waiters when the transaction commits, and tells the claim frontier where the new jobs are (with the library preloaded)';

CREATE FUNCTION ck_internal.queue_changed() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'ck_queue_changed';
COMMENT ON FUNCTION ck_internal.queue_changed() IS
'statement trigger of every queue (BEFORE UPDATE OR DELETE): an UPDATE or DELETE not issued by the extension''s functions makes the claim frontier start over when its transaction ends';

CREATE FUNCTION ck_internal.queue_left() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'ck_queue_left';
COMMENT ON FUNCTION ck_internal.queue_left() IS
'statement trigger of every queue (AFTER DELETE, REFERENCING OLD TABLE): each job of a limited concurrency key that left the queue hands its slot to the oldest parked job of its key, or frees it';

CREATE FUNCTION ck.claim_wait_mode()
RETURNS text
LANGUAGE c STABLE PARALLEL SAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_claim_wait_mode';
COMMENT ON FUNCTION ck.claim_wait_mode() IS
'how ck.claim_wait learns of new jobs: commit (woken by the committing transaction) or poll (looks again every 10 to 200 ms; only on a server without room for the shared state)';

-- Resolves an unqualified queue name with the caller's search_path, as CREATE TABLE does;
-- every name in the DDL it runs is schema-qualified.
CREATE FUNCTION ck.create_queue(queue text, lease interval DEFAULT '30 seconds', max_attempts integer DEFAULT 5,
                                notify boolean DEFAULT false)
RETURNS regclass
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_create_queue';
COMMENT ON FUNCTION ck.create_queue(text, interval, integer, boolean) IS
'creates a queue table (id, payload, priority, run_at, attempts, lease_token, enqueued_at, last_error), its claim index and its dead-letter table';

CREATE FUNCTION ck.drop_queue(queue regclass)
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

-- After DROP EXTENSION concurrency_kit CASCADE and CREATE EXTENSION, queue tables survive
-- without their registration, triggers and everything kept in ck's tables.
CREATE FUNCTION ck.adopt_queue(queue regclass, lease interval DEFAULT '30 seconds', max_attempts integer DEFAULT 5,
                               notify boolean DEFAULT false)
RETURNS regclass
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_adopt_queue';
COMMENT ON FUNCTION ck.adopt_queue(regclass, interval, integer, boolean) IS
'takes back a queue table that lost its registration (DROP EXTENSION ... CASCADE, CREATE EXTENSION): checks its columns, finds or makes its dead-letter table, makes its missing indexes and triggers, registers it; leases held then are lost, parked jobs are ready, jobs waiting for dependencies are dead letters';

CREATE FUNCTION ck.enqueue(queue regclass, payload jsonb DEFAULT '{}', run_at timestamptz DEFAULT now(),
                           priority integer DEFAULT 0, unique_key text DEFAULT NULL, unique_for interval DEFAULT NULL,
                           concurrency_key text DEFAULT NULL, after bigint[] DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_enqueue';
COMMENT ON FUNCTION ck.enqueue(regclass, jsonb, timestamptz, integer, text, interval, text, bigint[]) IS
'adds one job (lower priority first; not before run_at) and returns its id; with a unique_key, a job already in the queue with that key is returned instead and nothing is inserted; with unique_for too, the key stays taken that long, even after its job has left (the id returned is then that of the job that took it); with a concurrency_key, the job counts against that key''s limit (ck.set_concurrency_limit); with after, the job waits until every listed job still in the queue has completed, and is buried if one of them is buried or cancelled';

CREATE FUNCTION ck.enqueue_unique(queue regclass, unique_key text, payload jsonb,
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

-- Acknowledgements (R3): the plain form raises CK005 when the lease was lost (the job's effects
-- roll back with the transaction); the try_ form returns a failure value instead.
CREATE FUNCTION ck.complete(queue regclass, id bigint, lease_token bigint)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_complete';
COMMENT ON FUNCTION ck.complete(regclass, bigint, bigint) IS
'deletes a finished job if the lease token is still current: true; raises CK005 when the lease was lost (ck.try_complete returns false instead)';

CREATE FUNCTION ck.try_complete(queue regclass, id bigint, lease_token bigint)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_complete';
COMMENT ON FUNCTION ck.try_complete(regclass, bigint, bigint) IS
'deletes a finished job if the lease token is still current: true; false when the lease was lost';

CREATE FUNCTION ck.complete_and_claim(queue regclass, id bigint, lease_token bigint, batch integer DEFAULT 1,
                                      lease interval DEFAULT NULL)
RETURNS TABLE (id bigint, lease_token bigint, attempts integer, payload jsonb, lease_until timestamptz)
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1
AS 'MODULE_PATHNAME', 'ck_complete_and_claim';
COMMENT ON FUNCTION ck.complete_and_claim(regclass, bigint, bigint, integer, interval) IS
'a worker''s loop in one call: completes the job held (raising CK005 when the lease was lost, so the job''s effects roll back) and claims up to batch more, like ck.claim';

CREATE FUNCTION ck.complete_many(queue regclass, ids bigint[], lease_tokens bigint[])
RETURNS SETOF bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_complete_many';
COMMENT ON FUNCTION ck.complete_many(regclass, bigint[], bigint[]) IS
'ck.complete for the jobs of a batch claim in one statement: ids[i] with lease_tokens[i]; returns every id, or raises CK005 naming a pair whose lease was lost (nothing completed)';

CREATE FUNCTION ck.try_complete_many(queue regclass, ids bigint[], lease_tokens bigint[])
RETURNS SETOF bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_complete_many';
COMMENT ON FUNCTION ck.try_complete_many(regclass, bigint[], bigint[]) IS
'ck.try_complete for the jobs of a batch claim in one statement: returns the ids that were still yours and are done (the others are left alone)';

CREATE FUNCTION ck.fail(queue regclass, id bigint, lease_token bigint, error text DEFAULT NULL,
                        retry_in interval DEFAULT NULL)
RETURNS text
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_fail';
COMMENT ON FUNCTION ck.fail(regclass, bigint, bigint, text, interval) IS
'retry (ready again after retry_in or a jittered exponential backoff) or dead (attempts exhausted: moved to dead letters); raises CK005 when the lease was lost (ck.try_fail returns NULL instead)';

CREATE FUNCTION ck.try_fail(queue regclass, id bigint, lease_token bigint, error text DEFAULT NULL,
                            retry_in interval DEFAULT NULL)
RETURNS text
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_fail';
COMMENT ON FUNCTION ck.try_fail(regclass, bigint, bigint, text, interval) IS
'retry or dead, as ck.fail; NULL when the lease was lost';

CREATE FUNCTION ck.extend_lease(queue regclass, id bigint, lease_token bigint, lease interval)
RETURNS timestamptz
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_extend_lease';
COMMENT ON FUNCTION ck.extend_lease(regclass, bigint, bigint, interval) IS
'heartbeat: the new lease end (now() + lease); raises CK005 when the lease was lost (ck.try_extend_lease returns NULL instead)';

CREATE FUNCTION ck.try_extend_lease(queue regclass, id bigint, lease_token bigint, lease interval)
RETURNS timestamptz
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_try_extend_lease';
COMMENT ON FUNCTION ck.try_extend_lease(regclass, bigint, bigint, interval) IS
'heartbeat: the new lease end (now() + lease), or NULL when the lease was lost';

CREATE FUNCTION ck.retry_dead(queue regclass, id bigint)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_retry_dead';
COMMENT ON FUNCTION ck.retry_dead(regclass, bigint) IS
'puts a dead job back in its queue, ready now, with its attempts reset; false when there is no such dead job';

CREATE FUNCTION ck.purge_dead(queue regclass, older_than interval)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_purge_dead';
COMMENT ON FUNCTION ck.purge_dead(regclass, interval) IS
'deletes dead letters that died more than older_than ago; returns how many';

CREATE FUNCTION ck.queue_stats(queue regclass,
    OUT ready bigint, OUT scheduled bigint, OUT running bigint, OUT expired bigint, OUT dead bigint,
    OUT oldest_ready_age interval, OUT ready_estimated boolean, OUT paused boolean)
RETURNS record
LANGUAGE c STABLE PARALLEL RESTRICTED SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_queue_stats';
COMMENT ON FUNCTION ck.queue_stats(regclass) IS
'job counts: running, expired, scheduled and dead exact; ready exact up to 10,000, estimated beyond (ready_estimated); paused: claims are paused (ck.pause_queue)';

CREATE FUNCTION ck_internal.claim_frontier(queue regclass)
RETURNS TABLE (priority integer, run_at timestamptz, id bigint)
LANGUAGE c VOLATILE PARALLEL RESTRICTED SECURITY INVOKER ROWS 4
AS 'MODULE_PATHNAME', 'ck_claim_frontier';
COMMENT ON FUNCTION ck_internal.claim_frontier(regclass) IS
'where claims of each priority start reading the claim index, (run_at, id) on (NULL run_at: at its beginning; NULL id: from the first job of run_at); no rows while the frontier is not known (no claim yet, reset, more than 64 priorities: ck.claim_path says why)';

CREATE FUNCTION ck.claim_path(queue regclass, OUT path text, OUT reason text)
RETURNS record
LANGUAGE c VOLATILE PARALLEL RESTRICTED SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_claim_path';
COMMENT ON FUNCTION ck.claim_path(regclass) IS
'which way this session''s next claim of the queue goes, and why: frontier (from each priority''s frontier: the cost follows the claimable jobs), discover (the next claim finds the priorities, then as frontier), full (the whole claim index, dead entries included) or distributed (a Citus queue)';

CREATE FUNCTION ck.queue_activity()
RETURNS TABLE (queue regclass, enqueued bigint, claimed bigint, completed bigint, failed bigint, retried bigint,
               buried bigint, cancelled bigint, lost_acks bigint, duplicates bigint, since timestamptz)
LANGUAGE c VOLATILE PARALLEL RESTRICTED SECURITY INVOKER ROWS 10
AS 'MODULE_PATHNAME', 'ck_queue_activity';
COMMENT ON FUNCTION ck.queue_activity() IS
'counters per queue of this database since the shared state appeared (the server''s start when the library is preloaded, else the first use of a queue after it) or since the queue was first used: jobs enqueued, claimed, completed, failed (of which retried and buried), cancelled, counted when their transaction commits; acknowledgements that found the lease lost and duplicate unique keys refused, counted at once';

-- The queue in production (1.1.0, issue 47). Each part's objects go below its own heading.

-- Pause and resume
-- A paused queue's claims return nothing (claim_wait sleeps until the resume's commit or its
-- max_wait); nothing else changes: jobs keep their places, enqueues and acknowledgements go on.
-- The state is ck.queues.paused_at, or for one concurrency key its row of ck.paused_keys (below),
-- written by the queue's owner (row-level security, as ck.set_concurrency_limit). The pause waits,
-- bounded by lock_timeout, for the claims already in flight, so that no claim commits after it
-- (src/README.md, "Pause and resume").
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

-- Rate limits (and ck.try_rate for any SQL)
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

-- Job timeouts, distinct from the lease

-- A job's attempt runs at most ck.queues.timeout (NULL: no limit), whatever its heartbeats: the
-- claim records the attempt's deadline in the job's column timeout_at and caps its lease there,
-- ck.extend_lease never carries the lease past it, and once it has passed the attempt fails with
-- the reason 'timeout' (retried or buried by the usual rules); an acknowledgement after it finds
-- the lease lost (CK005).
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

-- Bulk redrive and purge of dead letters by filter

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

-- History of finished jobs, results, waiting for a job
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
-- (dumped with the other config tables: see the end of the install script)

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

------------------------------------------------------------------------------------------
-- Advisory locks keyed by (int4, int4), never hashed
------------------------------------------------------------------------------------------

-- Namespaces: the first int of a lock key, by name. Numbers come from the identity
-- sequence, so two names never share one. Rows are never deleted.
CREATE TABLE ck.lock_namespaces (
    id         integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL UNIQUE CHECK (octet_length(name) BETWEEN 1 AND 63),
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ck.lock_namespaces IS 'advisory-lock namespaces: name -> the first int of (int4, int4) keys';
GRANT SELECT, INSERT ON ck.lock_namespaces TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('ck.lock_namespaces', '');

CREATE FUNCTION ck.lock_namespace(name text)
RETURNS integer
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_lock_namespace';
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

CREATE FUNCTION ck.session_unlock_all()
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_session_unlock_all';
COMMENT ON FUNCTION ck.session_unlock_all() IS
'releases every session-level advisory lock of this session (pg_advisory_unlock_all)';

CREATE FUNCTION ck.session_locks_held(OUT ns integer, OUT key integer, OUT holds bigint)
RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_session_locks_held';
COMMENT ON FUNCTION ck.session_locks_held() IS
'the session locks this session took through ck.session_lock, with how many times each is held';

CREATE FUNCTION ck.held_locks()
RETURNS TABLE (ns integer, ns_name text, key integer, scope text, granted boolean)
LANGUAGE sql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
BEGIN ATOMIC
    SELECT l.classid::integer, n.name, l.objid::integer,
           CASE WHEN s.ns IS NULL THEN 'transaction' ELSE 'session' END, l.granted
    FROM pg_catalog.pg_locks AS l
    LEFT JOIN ck.lock_namespaces AS n ON n.id = l.classid::integer
    LEFT JOIN ck.session_locks_held() AS s ON s.ns = l.classid::integer AND s.key = l.objid::integer
    WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.pid = pg_catalog.pg_backend_pid()
      AND l.database = (SELECT d.oid FROM pg_catalog.pg_database AS d
                        WHERE d.datname = pg_catalog.current_database())
    ORDER BY 1, 3;
END;
COMMENT ON FUNCTION ck.held_locks() IS
'this session''s (int4, int4) advisory locks with namespace names; scope is session for locks taken with ck.session_lock';

CREATE FUNCTION ck.lock_waits()
RETURNS TABLE (waiting_pid integer, blocking_pids integer[], waited interval, lock text, query text)
LANGUAGE sql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
BEGIN ATOMIC
    SELECT w.pid,
           pg_catalog.pg_blocking_pids(w.pid),
           pg_catalog.clock_timestamp() - w.waitstart,
           CASE
               WHEN w.locktype = 'advisory' AND w.objsubid = 2
                   THEN 'advisory ' || coalesce(n.name, w.classid::text) || ':' || w.objid::integer
               WHEN w.locktype = 'advisory'
                   THEN 'advisory ' || ((w.classid::bigint << 32) | w.objid::bigint)
               WHEN w.locktype = 'tuple'
                   THEN 'row (' || w.page || ',' || w.tuple || ') of ' || w.relation::regclass::text
               WHEN w.locktype = 'relation'
                   THEN w.mode || ' on ' || w.relation::regclass::text
               WHEN w.locktype = 'transactionid'
                   THEN 'transaction ' || w.transactionid || ' (a row it changed)'
               ELSE w.locktype
           END,
           a.query
    FROM pg_catalog.pg_locks AS w
    LEFT JOIN ck.lock_namespaces AS n ON w.locktype = 'advisory' AND n.id = w.classid::integer
    LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = w.pid
    WHERE NOT w.granted AND w.pid IS NOT NULL
    ORDER BY w.waitstart;
END;
COMMENT ON FUNCTION ck.lock_waits() IS
'who waits on whom: every waiting backend, the pids blocking it, how long it has waited, the lock (advisory locks as namespace:key) and its query';

CREATE FUNCTION ck.set_lock_timeout(timeout interval)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_set_lock_timeout';
COMMENT ON FUNCTION ck.set_lock_timeout(interval) IS
'SET LOCAL lock_timeout for the rest of this transaction; raises outside a transaction block, where it would do nothing';

------------------------------------------------------------------------------------------
-- Whole-transaction retry inside the server
------------------------------------------------------------------------------------------

-- The caller's sql runs with the caller's search_path (a procedure with SET clauses could
-- not commit anyway). ck.retry runs no SQL of its own.
CREATE PROCEDURE ck.retry(sql text, isolation text DEFAULT 'serializable', max_attempts integer DEFAULT 10,
                          retry_lock_timeout boolean DEFAULT false, INOUT attempts integer DEFAULT NULL)
LANGUAGE c SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_retry';
COMMENT ON PROCEDURE ck.retry(text, text, integer, boolean, integer) IS
'runs sql in a fresh transaction per attempt at that isolation level, retrying 40001 and 40P01 (and 55P03 when asked) with capped, jittered exponential backoff; returns the attempts it took';

CREATE FUNCTION ck.current_attempt()
RETURNS integer
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_current_attempt';
COMMENT ON FUNCTION ck.current_attempt() IS
'the attempt number of the ck.retry running in this backend (1 on the first try), 0 outside ck.retry';

CREATE FUNCTION ck.retry_stats(OUT calls bigint, OUT attempts bigint, OUT retries bigint, OUT exhausted bigint)
RETURNS record
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_retry_stats';
COMMENT ON FUNCTION ck.retry_stats() IS
'this backend''s ck.retry counters: calls, attempts, retries, and calls that ran out of attempts';

------------------------------------------------------------------------------------------
-- Guards: constraints beat code
------------------------------------------------------------------------------------------

CREATE FUNCTION ck.overlap_guard_ddl(tbl regclass, range_col name, key_cols name[] DEFAULT '{}',
                                     constraint_name name DEFAULT NULL)
RETURNS text
LANGUAGE c STABLE PARALLEL SAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_overlap_guard_ddl';
COMMENT ON FUNCTION ck.overlap_guard_ddl(regclass, name, name[], name) IS
'DDL for an exclusion constraint (key WITH =, range WITH &&) with NOT NULL and not-empty checks on the range; btree_gist first when a scalar key needs it';

CREATE FUNCTION ck.find_overlaps(tbl regclass, range_col name, key_cols name[] DEFAULT '{}',
                                 max_pairs integer DEFAULT 1000)
RETURNS TABLE (a tid, b tid, key text, a_range text, b_range text)
LANGUAGE c STABLE PARALLEL RESTRICTED SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_find_overlaps';
COMMENT ON FUNCTION ck.find_overlaps(regclass, name, name[], integer) IS
'pairs of existing rows (by ctid) with equal keys and overlapping ranges, which an overlap guard would reject; one sorted pass';

CREATE FUNCTION ck.add_overlap_guard(tbl regclass, range_col name, key_cols name[] DEFAULT '{}',
                                     constraint_name name DEFAULT NULL)
RETURNS text
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_add_overlap_guard';
COMMENT ON FUNCTION ck.add_overlap_guard(regclass, name, name[], name) IS
'refuses (23P01, listing the first pairs) when rows already overlap; else runs ck.overlap_guard_ddl and returns it';

CREATE FUNCTION ck.unique_guard_ddl(tbl regclass, cols name[], where_clause text DEFAULT NULL)
RETURNS text
LANGUAGE c STABLE PARALLEL SAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_unique_guard_ddl';
COMMENT ON FUNCTION ck.unique_guard_ddl(regclass, name[], text) IS
'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS on cols, with where_clause parsed, checked against the table and deparsed';

------------------------------------------------------------------------------------------
-- Checks
------------------------------------------------------------------------------------------

-- PARALLEL UNSAFE, not SAFE or RESTRICTED: each function is analysed inside a
-- subtransaction (so one body that does not parse cannot fail the audit), with a temporary
-- search_path; PostgreSQL refuses to start a subtransaction in parallel mode, which the
-- leader is in too, so even RESTRICTED could fail under a parallel plan.
CREATE FUNCTION ck.volatility_audit(schema name DEFAULT NULL)
RETURNS TABLE(func regprocedure, declared text, suggested text, reason text)
LANGUAGE c STABLE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_volatility_audit';
COMMENT ON FUNCTION ck.volatility_audit(name) IS
'SQL and PL/pgSQL functions whose volatility label is wrong: IMMUTABLE that read tables or call STABLE functions, VOLATILE that only read (should be STABLE), STABLE or IMMUTABLE with side effects (should be VOLATILE); all non-system schemas but ck when schema is NULL';

-- The query is the caller's and is explained with the caller's search_path; the SQL
-- scan_check runs itself is schema-qualified.
CREATE FUNCTION ck.scan_check(query text)
RETURNS TABLE (node text, relation text, advice text)
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_scan_check';
COMMENT ON FUNCTION ck.scan_check(text) IS
'EXPLAINs one SELECT/INSERT/UPDATE/DELETE/MERGE (never runs it) and names each sequential scan, a whole-table predicate lock under SERIALIZABLE';

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
-- its new limit: the keys' slot rows locked first, then the jobs of each key counted (one pass
-- over the queue for all keys), then as many parked jobs unparked as the limit leaves room for;
-- without a limit, all of them, and the slot rows go.
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
COMMENT ON FUNCTION ck.set_concurrency_limit(regclass, text, integer) IS
'at most max_running jobs of the concurrency key are ready or leased at once (the others wait, parked, and move up as jobs of the key leave the queue); a NULL key sets the default for every key without a limit of its own; NULL max_running removes the limit';

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

CREATE FUNCTION ck_internal.queue_dependency_left() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'ck_queue_dependency_left';
COMMENT ON FUNCTION ck_internal.queue_dependency_left() IS
'row trigger of every queue (AFTER DELETE, WHEN the job has dependants): records the departure and resolves a batch of its dependants (counted down if it completed, buried if it was buried or cancelled)';

-- Optimistic versioned updates, version guard, row locks (issue 24)

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

CREATE FUNCTION ck.lock_rows(tbl regclass, keys "any", mode text DEFAULT 'no key update',
                             timeout interval DEFAULT NULL, key_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_lock_rows';
COMMENT ON FUNCTION ck.lock_rows(regclass, "any", text, interval, name) IS
'locks the rows with those keys (an array; a literal ''{A1,B2}'' is read as the key column''s array type) in key order (no deadlock between callers), mode no key update (default), update, share or key share; with a timeout 55P03 after at most that long (''0'': at once); how many rows were locked (a key without a row locks nothing); WARNING 25P01 outside a transaction block';

COMMENT ON FUNCTION ck.sqlstate_action(text) IS
'what a client should do with an error: retry (40001, 40P01, CK006), busy (55P03, CK007), conflict (23505, 23P01, CK001-CK005) or error';

-- PARALLEL UNSAFE like ck.volatility_audit: each function is analysed in a subtransaction,
-- which PostgreSQL refuses in parallel mode.
CREATE FUNCTION ck.lock_audit(schema name DEFAULT NULL)
RETURNS TABLE(func regprocedure, statement text, advice text)
LANGUAGE c STABLE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_lock_audit';
COMMENT ON FUNCTION ck.lock_audit(name) IS
'statements of SQL and PL/pgSQL functions that take FOR UPDATE on a table a foreign key references while the function neither deletes from it nor changes a referenced key: FOR NO KEY UPDATE would do and does not block inserts of referencing rows; a body that cannot be analysed gives a row saying so; all non-system schemas but ck when schema is NULL';

-- PARALLEL UNSAFE like ck.lock_audit: each function is analysed in a subtransaction.
CREATE FUNCTION ck.race_audit(schema name DEFAULT NULL)
RETURNS TABLE(func regprocedure, kind text, read_statement text, write_statement text, rule text, fix text)
LANGUAGE c STABLE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_race_audit';
COMMENT ON FUNCTION ck.race_audit(name) IS
'read-decide-write races in SQL and PL/pgSQL functions and procedures: lost_update (an unlocked read whose value a later UPDATE of the same table writes back, with no re-check in its WHERE) and write_skew (an unlocked check of a table guarding an INSERT into it that no unique or exclusion constraint covers, or an UPDATE decided on a count or EXISTS); each row names the two statements, the rule and the fix; functions set to SERIALIZABLE are skipped; a body that cannot be analysed gives a row saying so; all non-system schemas but ck when schema is NULL';

-- Distributed queues (0.3.2): a queue distributed over a Citus cluster by ck.distribute_queue.
-- Each shard of the queue is a queue of its own on the worker that holds it (registered in that
-- worker's ck.queues, with its triggers, claim frontier and unique index); the coordinator's
-- functions send each call to one shard (src/queue/engine/distributed.cpp). A job's shard is known
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
-- (Rate limits: a queue that has them is not distributed.)
CREATE TRIGGER queue_rates_distributed BEFORE INSERT ON ck.distributed_queues
    FOR EACH ROW EXECUTE FUNCTION ck_internal.queue_rates_distributed();
CREATE TRIGGER queue_paused_keys_distributed BEFORE INSERT ON ck.distributed_queues
    FOR EACH ROW EXECUTE FUNCTION ck_internal.queue_paused_keys_distributed();

-- On the worker that holds it, makes a shard of a queue being distributed a queue of its own:
-- ids i modulo shard_count from first_id on, column part at its value, the unique index and
-- the triggers that Citus does not take on the distributed table, and its row in ck.queues.
-- Called by ck.distribute_queue through a statement routed to that shard.
CREATE FUNCTION ck_internal.attach_queue_shard(shard regclass, dead_shard regclass, part integer, shard_index integer,
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

-- On every node that holds a shard of a queue being distributed (and on the coordinator): the
-- queue's row of ck.distributed_queues there, so that queue calls made on that node route to
-- the shards as the coordinator's do (0.3.3). A node that does not know the distributed table
-- (Citus without metadata on the workers) gets no row: calls go through the coordinator.
CREATE FUNCTION ck_internal.register_distributed_queue(queue text, parts integer[], shards text[])
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
COMMENT ON FUNCTION ck_internal.register_distributed_queue(text, integer[], text[]) IS
'internal, run by ck.distribute_queue on every node holding a shard and on the coordinator: the queue''s row of ck.distributed_queues there, so that calls on that node route to the shards';

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
COMMENT ON FUNCTION ck.distribute_queue(regclass, integer) IS
'on a Citus cluster: distributes a queue (and its dead letters) over the workers; every queue call above keeps working on it, each touching one shard';

-- On the worker that holds it, the registrations of a shard of a queue being dropped.
CREATE FUNCTION ck_internal.detach_queue_shard(shard regclass)
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
COMMENT ON FUNCTION ck_internal.detach_queue_shard(regclass) IS
'internal, run by ck.drop_queue on the worker holding a shard of a distributed queue: removes the shard''s registrations there, the queue''s row of ck.distributed_queues among them';

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

------------------------------------------------------------------------------------------
-- Internals: schema ck_internal (trigger functions, Citus plumbing)
------------------------------------------------------------------------------------------

-- Made above in their own areas' sections, moved here as the update from 0.4.0 moves them
-- (SET SCHEMA keeps their OIDs: the triggers and the SQL bodies that call them follow).
ALTER FUNCTION ck.version_guard() SET SCHEMA ck_internal;
ALTER FUNCTION ck.session_locks_held() SET SCHEMA ck_internal;

-- 1.1.0, the history of finished jobs: its config table is registered last, as the update
-- from 1.0.0 registers it (pg_dump keeps the order).
SELECT pg_catalog.pg_extension_config_dump('ck.history_partitions', '');
