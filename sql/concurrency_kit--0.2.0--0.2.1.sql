-- concurrency_kit 0.2.0 -> 0.2.1: a queue's default lease in ck.queues must be finite.
-- PostgreSQL 17+ has interval 'infinity', which passes lease > interval '0'; the functions
-- refuse an infinite lease (22023), and now so does the table, when a row is changed by
-- hand. The constraint keeps its name; on 15 and 16 isfinite(interval) is always true.
-- The only interval column of the extension's tables is ck.queues.lease (the queue tables
-- ck.create_queue makes have none).
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.2.1'" to load this file. \quit

-- A row given an infinite lease by hand under 0.2.0 would fail the new constraint: say
-- which queues, and how to fix them, before ALTER TABLE does with a bare 23514.
DO $$
DECLARE
    bad pg_catalog.text;
BEGIN
    SELECT pg_catalog.string_agg(q.queue::pg_catalog.text, ', ' ORDER BY q.queue::pg_catalog.text) INTO bad
    FROM ck.queues AS q WHERE NOT pg_catalog.isfinite(q.lease);
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'queues with an infinite lease in ck.queues: %', bad
            USING ERRCODE = 'check_violation',
                  HINT = 'Give them a finite lease (UPDATE ck.queues SET lease = ''30 seconds'' WHERE queue = ...), then update again.';
    END IF;
END
$$;

ALTER TABLE ck.queues
    DROP CONSTRAINT queues_lease_check,
    ADD CONSTRAINT queues_lease_check CHECK (lease > interval '0' AND pg_catalog.isfinite(lease));
