-- concurrency_kit 0.1.0 -> 0.2.0: no function carries a SET search_path clause any more.
-- Everything the extension runs is immune to the caller's search_path by construction
-- (schema-qualified relations, operators, functions and types; SQL bodies BEGIN ATOMIC),
-- so the clause goes: on PostgreSQL 15 it cost more than the statement it guarded, and it
-- forced a pinned path onto the user's own triggers. The C functions' statements changed
-- in the library; their SQL declarations only lose the clause.
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.2.0'" to load this file. \quit

ALTER FUNCTION ck.add_overlap_guard(regclass,name,name[],name) RESET search_path;
ALTER FUNCTION ck.claim(regclass,integer,interval) RESET search_path;
ALTER FUNCTION ck.claim_wait(regclass,integer,interval,interval) RESET search_path;
ALTER FUNCTION ck.complete(regclass,bigint,bigint) RESET search_path;
ALTER FUNCTION ck.complete_many(regclass,bigint[],bigint[]) RESET search_path;
ALTER FUNCTION ck.decrement(regclass,name,anyelement,bigint,name) RESET search_path;
ALTER FUNCTION ck.enqueue(regclass,jsonb,timestamp with time zone,integer) RESET search_path;
ALTER FUNCTION ck.extend_lease(regclass,bigint,bigint,interval) RESET search_path;
ALTER FUNCTION ck.fail(regclass,bigint,bigint,text,interval) RESET search_path;
ALTER FUNCTION ck.find_overlaps(regclass,name,name[],integer) RESET search_path;
ALTER FUNCTION ck.increment(regclass,name,anyelement,bigint,numeric,name) RESET search_path;
ALTER FUNCTION ck.overlap_guard_ddl(regclass,name,name[],name) RESET search_path;
ALTER FUNCTION ck.purge_dead(regclass,interval) RESET search_path;
ALTER FUNCTION ck.queue_stats(regclass) RESET search_path;
ALTER FUNCTION ck.retry_dead(regclass,bigint) RESET search_path;
ALTER FUNCTION ck.transition(regclass,anyelement,name,text,text,name) RESET search_path;
ALTER FUNCTION ck.transition_or_raise(regclass,anyelement,name,text,text,name) RESET search_path;
ALTER FUNCTION ck.try_decrement(regclass,name,anyelement,bigint,name) RESET search_path;
ALTER FUNCTION ck.try_increment(regclass,name,anyelement,bigint,numeric,name) RESET search_path;
ALTER FUNCTION ck.unique_guard_ddl(regclass,name[],text) RESET search_path;
ALTER FUNCTION ck.volatility_audit(name) RESET search_path;

-- Functions with SQL or PL/pgSQL bodies: rewritten with qualified names (CREATE OR REPLACE
-- also drops their SET clause).
CREATE OR REPLACE FUNCTION ck.notify_queue() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER
AS $$
BEGIN
    PERFORM pg_catalog.pg_notify(pg_catalog.concat(TG_TABLE_SCHEMA, '.', TG_TABLE_NAME), '');
    RETURN NULL;
END
$$;

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
    EXECUTE pg_catalog.format('DROP TABLE %s, %s', queue_name,
        (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, dead, 0)).identity);
END
$$;

CREATE OR REPLACE FUNCTION ck.held_locks()
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

CREATE OR REPLACE FUNCTION ck.lock_waits()
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

-- New in 0.2.0: the worker's loop in one call, and its SQLSTATE CK005 (lease lost).
CREATE FUNCTION ck.complete_and_claim(queue regclass, id bigint, lease_token bigint, batch integer DEFAULT 1,
                                      lease interval DEFAULT NULL)
RETURNS TABLE (id bigint, lease_token bigint, attempt integer, payload jsonb, lease_until timestamptz)
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 1
AS 'MODULE_PATHNAME', 'ck_complete_and_claim';
COMMENT ON FUNCTION ck.complete_and_claim(regclass, bigint, bigint, integer, interval) IS
'a worker''s loop in one call: completes the job held (raising CK005 when the lease was lost, so the job''s effects roll back) and claims up to batch more, like ck.claim';
COMMENT ON FUNCTION ck.sqlstate_action(text) IS
'what a client should do with an error: retry (40001, 40P01), busy (55P03), conflict (23505, 23P01, CK001-CK005) or error';

-- New in 0.2.0: claim_wait woken on commit (with the library preloaded). Every queue gets the
-- statement trigger that marks it; queues made under 0.1.0 get it here.
CREATE FUNCTION ck.queue_ready() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'ck_queue_ready';
COMMENT ON FUNCTION ck.queue_ready() IS
'statement trigger of every queue (AFTER INSERT): wakes the queue''s ck.claim_wait waiters when the transaction commits (with the library preloaded)';

CREATE FUNCTION ck.claim_wait_mode()
RETURNS text
LANGUAGE c STABLE PARALLEL SAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_claim_wait_mode';
COMMENT ON FUNCTION ck.claim_wait_mode() IS
'how ck.claim_wait learns of new jobs: commit (woken by the committing transaction; the library is in shared_preload_libraries) or poll (looks again every 10 to 200 ms)';

COMMENT ON FUNCTION ck.claim_wait(regclass, integer, interval, interval) IS
'like claim, but waits up to max_wait for jobs: woken by the commit that makes jobs ready when the library is preloaded, else looking again every 10 to 200 ms; also wakes when a scheduled job or a lease end comes due';

DO $$
DECLARE
    q pg_catalog.regclass;
BEGIN
    FOR q IN SELECT queue FROM ck.queues LOOP
        EXECUTE pg_catalog.format('CREATE TRIGGER ck_ready AFTER INSERT ON %s FOR EACH STATEMENT EXECUTE FUNCTION ck.queue_ready()',
                                  (pg_catalog.pg_identify_object('pg_catalog.pg_class'::pg_catalog.regclass, q, 0)).identity);
    END LOOP;
END
$$;
