-- concurrency_kit 0.2.1 -> 0.2.2: claims start at a frontier instead of the head of the claim
-- index (see the README, "The claim frontier"). The frontier learns where new jobs are from
-- each queue's AFTER INSERT trigger ck_ready, which now reads the statement's transition
-- table: the triggers of existing queues are made again with REFERENCING NEW TABLE. (Until
-- they are, an insert makes the frontier start over, which is safe.) A new statement trigger,
-- ck_changed, makes it start over after plain UPDATEs and DELETEs of jobs. Jobs stay where
-- they are; ck.claim_frontier and ck.queue_changed are new.
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.2.2'" to load this file. \quit

COMMENT ON FUNCTION ck.queue_ready() IS
'statement trigger of every queue (AFTER INSERT, REFERENCING NEW TABLE): wakes the queue''s ck.claim_wait waiters when the transaction commits, and tells the claim frontier where the new jobs are (with the library preloaded)';

CREATE FUNCTION ck.queue_changed() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'ck_queue_changed';
COMMENT ON FUNCTION ck.queue_changed() IS
'statement trigger of every queue (BEFORE UPDATE OR DELETE): an UPDATE or DELETE not issued by the extension''s functions makes the claim frontier start over when its transaction ends';

DO $$
DECLARE
    q pg_catalog.regclass;
BEGIN
    FOR q IN
        SELECT t.tgrelid::pg_catalog.regclass FROM pg_catalog.pg_trigger AS t
        JOIN ck.queues AS r ON r.queue OPERATOR(pg_catalog.=) t.tgrelid
        WHERE t.tgname OPERATOR(pg_catalog.=) 'ck_ready' AND t.tgnewtable IS NULL
    LOOP
        EXECUTE pg_catalog.format('DROP TRIGGER ck_ready ON %s', q);
        EXECUTE pg_catalog.format('CREATE TRIGGER ck_ready AFTER INSERT ON %s REFERENCING NEW TABLE AS ck_new '
                                  'FOR EACH STATEMENT EXECUTE FUNCTION ck.queue_ready()', q);
    END LOOP;
    FOR q IN SELECT r.queue FROM ck.queues AS r JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) r.queue LOOP
        EXECUTE pg_catalog.format('CREATE TRIGGER ck_changed BEFORE UPDATE OR DELETE ON %s '
                                  'FOR EACH STATEMENT EXECUTE FUNCTION ck.queue_changed()', q);
    END LOOP;
END
$$;

CREATE FUNCTION ck.claim_frontier(queue regclass)
RETURNS TABLE (priority integer, run_at timestamptz, id bigint)
LANGUAGE c VOLATILE PARALLEL RESTRICTED SECURITY INVOKER ROWS 4
AS 'MODULE_PATHNAME', 'ck_claim_frontier';
COMMENT ON FUNCTION ck.claim_frontier(regclass) IS
'where claims of each priority start reading the claim index, (run_at, id) on (NULL run_at: at its beginning; NULL id: from the first job of run_at); no rows while the frontier is not known (library not preloaded, no claim yet, reset, more than 16 priorities)';
