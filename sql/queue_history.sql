-- The history of finished jobs (1.1.0): opt-in per queue with a retention, written by the
-- statement that removes the job; lookup by id (ck.job), counts per period (ck.history_counts),
-- results on acknowledgement, ck.await_job. The races are test/specs/queue_history_race.spec.
SELECT ck.create_queue('hq', lease => '1 hour', max_attempts => 2) IS NOT NULL AS created;
SELECT ck.create_queue('plain_q', lease => '1 hour') IS NOT NULL AS created;

-- Off by default: nothing is recorded, and a finished job is gone; an id never given is unknown.
SELECT history, history_retention, history_period FROM ck.queues WHERE queue = 'hq'::regclass;
SELECT ck.enqueue('plain_q', '{"n": 0}') AS id \gset
SELECT state, attempts FROM ck.job('plain_q', :id);
SELECT ck.complete('plain_q', id, lease_token, '{"ignored": true}') FROM ck.claim('plain_q');
SELECT state FROM ck.job('plain_q', :id);
SELECT state FROM ck.job('plain_q', :id + 1000);
SELECT state, result, error FROM ck.await_job('plain_q', :id, '0');

-- Bad input: nothing changes.
SELECT ck.set_history(NULL, '1 day');
SELECT ck.set_history('hq', '-1 day');
SELECT ck.set_history('hq', '30 seconds');
SELECT ck.set_history('hq', '11 years');
SELECT ck.set_history('hq', '1 day', '1 second');
SELECT ck.set_history('hq', '1 day', '2 days');
SELECT ck.set_history('hq', '1000 days', '1 hour');
SELECT ck.set_history('hq', NULL, '1 hour');
CREATE TABLE hq_plain_table (id bigint);
SELECT ck.set_history('hq_plain_table', '1 day');
SELECT ck.maintain_history('hq');
SELECT * FROM ck.history_counts('hq');
SELECT count(*) AS tables FROM pg_class WHERE relname LIKE 'hq_history%';

-- On: the period follows from the retention (at most 200 partitions within it); partitions
-- are made for the current period and two ahead, and a default one catches the rest.
SELECT ck.set_history('hq', '7 days') AS history;
SELECT history::text, history_retention, history_period FROM ck.queues WHERE queue = 'hq'::regclass;
SELECT count(*) AS partitions, bool_and(ends - starts = '1 hour') AS hourly, bool_or(sealed) AS sealed,
       min(starts) <= now() AND max(ends) >= now() + interval '2 hours' AS ahead
FROM ck.history_partitions WHERE queue = 'hq'::regclass;
SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'hq_history'::regclass AND c.relname = 'hq_history_default';
-- Maintenance again makes nothing new; periods of other lengths for other retentions.
SELECT * FROM ck.maintain_history('hq');
SELECT r, (SELECT p FROM unnest('{1 minute,5 minutes,15 minutes,1 hour,6 hours,1 day,7 days,28 days}'::interval[]) AS p
           WHERE extract(epoch FROM r) / extract(epoch FROM p) <= 200 ORDER BY p LIMIT 1) AS period
FROM unnest('{1 minute,1 hour,1 day,30 days,10 years}'::interval[]) AS r;

-- Completed (with a result), buried by ck.fail on the last attempt, buried as an expired last
-- lease, cancelled: each recorded once, with its attempts, error, result and timings.
SELECT ck.enqueue('hq', '{"n": 1}') AS j1, ck.enqueue('hq', '{"n": 2}') AS j2,
       ck.enqueue('hq', '{"n": 3}') AS j3, ck.enqueue('hq', '{"n": 4}') AS j4, ck.enqueue('hq', '{"n": 5}') AS j5 \gset
SELECT state, attempts, finished_at FROM ck.job('hq', :j1);
CREATE TEMP TABLE leased AS SELECT id, lease_token FROM ck.claim('hq', 3);
SELECT state FROM ck.job('hq', :j1);
SELECT ck.complete('hq', id, lease_token, '{"answer": 42}') FROM leased WHERE id = :j1;
SELECT ck.fail('hq', id, lease_token, 'boom', '1 hour') FROM leased WHERE id = :j2;
UPDATE hq SET attempts = 1, run_at = now() - interval '1 second' WHERE id = :j2;
SELECT ck.fail('hq', id, lease_token, 'boom again') FROM ck.claim('hq') WHERE id = :j2;
SELECT ck.cancel('hq', :j4);
-- j3's lease expires on its last attempt (attempts = max_attempts): the next claim buries it.
UPDATE hq SET attempts = 2, run_at = now() - interval '1 second' WHERE id = :j3;
SELECT count(*) AS claimed FROM ck.claim('hq', 5);
SELECT id - :j1 AS n, state, attempts, error, result, payload, enqueued_at IS NOT NULL AS enqueued,
       finished_at BETWEEN enqueued_at AND clock_timestamp() AS finished
FROM hq_history ORDER BY id;
SELECT state, attempts, error, result, finished_at > enqueued_at AS timed FROM ck.job('hq', :j1);
SELECT state, error FROM ck.job('hq', :j2);
SELECT state, error FROM ck.job('hq', :j4);
SELECT state FROM ck.job('hq', :j5);
SELECT state FROM ck.job('hq', :j5 + 1000);
-- The rows are in a partition, not in the default one.
SELECT count(*) AS in_default FROM hq_history_default;
-- A dead letter retried and finished again: two records, the lookup gives the last.
SELECT ck.retry_dead('hq', :j2);
SELECT state FROM ck.job('hq', :j2);
SELECT ck.complete('hq', id, lease_token) FROM ck.claim('hq', 5) WHERE id = :j2;
SELECT state, result FROM ck.job('hq', :j2);
SELECT count(*) AS records_of_j2 FROM hq_history WHERE id = :j2;

-- complete_many and complete_and_claim with results; try_complete with a stale token keeps nothing.
SELECT ck.enqueue('hq', '{"n": 6}') AS j6, ck.enqueue('hq', '{"n": 7}') AS j7, ck.enqueue('hq', '{"n": 8}') AS j8 \gset
DROP TABLE leased;
CREATE TEMP TABLE leased AS SELECT id, lease_token FROM ck.claim('hq', 10) WHERE id IN (:j6, :j7, :j8);
SELECT ck.complete_many('hq', ARRAY[:j6, :j7]::bigint[], (SELECT array_agg(lease_token ORDER BY id) FROM leased WHERE id IN (:j6, :j7)),
                        ARRAY['{"r": 6}', NULL]::jsonb[]);
SELECT ck.complete_many('hq', ARRAY[:j8]::bigint[], ARRAY[1]::bigint[], ARRAY['{}', '{}']::jsonb[]);
SELECT ck.try_complete('hq', :j8, 0, '{"stale": true}');
SELECT ck.enqueue('hq', '{"n": 9}') AS j9 \gset
SELECT id = :j9 AS next FROM ck.complete_and_claim('hq', :j8, (SELECT lease_token FROM leased WHERE id = :j8), 1, NULL, '{"r": 8}');
SELECT id - :j1 AS n, state, result FROM hq_history WHERE id IN (:j6, :j7, :j8) ORDER BY id;
-- The 1.0 calls keep their meaning, untyped arguments too: no overload is ambiguous.
SELECT ck.try_complete('hq', :j9, 0);
SELECT count(*) FROM ck.complete_and_claim('hq', :j9, 0, '1') ;

-- Counts per period and state: the current period counted, the others from their kept counts.
SELECT state, sum(jobs) AS jobs FROM ck.history_counts('hq') GROUP BY state ORDER BY state;
SELECT count(*) > 0 AS some, bool_and(period_end > now() - interval '1 day') AS since_only FROM ck.history_counts('hq', now() - interval '1 day');
SELECT count(*) FROM ck.history_counts('hq', now() + interval '1 day');

-- Expiry: an old partition (made by hand here, as a partition from days ago would be) is
-- sealed with its counts, then dropped whole once its period ended retention ago; rows the
-- default partition caught are deleted once expired.
CREATE TABLE hq_history_old (LIKE hq_history INCLUDING ALL);
ALTER TABLE hq_history ATTACH PARTITION hq_history_old FOR VALUES FROM ('2000-01-01') TO ('2000-01-02');
INSERT INTO ck.history_partitions (queue, partition, starts, ends) VALUES ('hq', 'hq_history_old', '2000-01-01', '2000-01-02');
CREATE TABLE hq_history_recent (LIKE hq_history INCLUDING ALL);
ALTER TABLE hq_history ATTACH PARTITION hq_history_recent FOR VALUES FROM (now() - interval '2 days') TO (now() - interval '1 day');
INSERT INTO ck.history_partitions (queue, partition, starts, ends) VALUES ('hq', 'hq_history_recent', now() - interval '2 days', now() - interval '1 day');
INSERT INTO hq_history (id, state, attempts, finished_at) VALUES
    (-1, 'completed', 1, '2000-01-01 12:00'), (-2, 'completed', 1, now() - interval '36 hours'),
    (-3, 'buried', 2, now() - interval '36 hours'), (-4, 'cancelled', 0, '1999-01-01');
SELECT count(*) AS in_default FROM hq_history_default;
SELECT * FROM ck.maintain_history('hq');
SELECT to_regclass('hq_history_old') AS old, to_regclass('hq_history_recent')::text AS recent;
SELECT sealed, completed, buried, cancelled FROM ck.history_partitions WHERE partition = 'hq_history_recent'::regclass;
SELECT count(*) AS in_default FROM hq_history_default;
SELECT period_start = (SELECT starts FROM ck.history_partitions WHERE partition = 'hq_history_recent'::regclass) AS recent, state, jobs
FROM ck.history_counts('hq', now() - interval '3 days') ORDER BY period_start LIMIT 2;

-- Privileges: a worker with SELECT, UPDATE, DELETE on the queue completes, and its records are
-- written; it may not set the history nor maintain it. A role without rights on the queue
-- reads no record.
CREATE ROLE regress_ck_history_worker;
CREATE ROLE regress_ck_history_other;
GRANT SELECT, UPDATE, DELETE ON hq TO regress_ck_history_worker;
SELECT ck.enqueue('hq', '{"n": 10}') AS j10 \gset
SET ROLE regress_ck_history_worker;
SELECT ck.complete('hq', id, lease_token, '{"by": "worker"}') FROM ck.claim('hq') WHERE id = :j10;
SELECT state, result FROM ck.job('hq', :j10);
SELECT ck.set_history('hq', '1 day');
SELECT ck.maintain_history('hq');
INSERT INTO hq_history_default (id, state, attempts, finished_at) VALUES (1, 'completed', 1, now());
SET ROLE regress_ck_history_other;
SELECT count(*) FROM hq_history;
INSERT INTO hq_history (id, state, attempts, finished_at) VALUES (1, 'completed', 1, now());
SELECT count(*) AS visible_counts FROM ck.history_partitions WHERE queue = 'hq'::regclass;
RESET ROLE;

-- Turned off: the table and its rows stay, completions write nothing more; on again, the
-- same table.
SELECT ck.set_history('hq', NULL) = 'hq_history'::regclass AS kept;
SELECT ck.enqueue('hq', '{"n": 11}') AS j11 \gset
SELECT ck.complete('hq', id, lease_token, '{"r": 11}') FROM ck.claim('hq') WHERE id = :j11;
SELECT count(*) FROM hq_history WHERE id = :j11;
SELECT state FROM ck.job('hq', :j11);
SELECT ck.set_history('hq', '1 day')::text AS again;
SELECT history_period FROM ck.queues WHERE queue = 'hq'::regclass;

-- ck.await_job: a finished job at once (its record); a job still queued when max_wait runs out;
-- bad input.
SELECT state, result, error FROM ck.await_job('hq', :j1);
SELECT state, result, error FROM ck.await_job('hq', :j2, '0');
SELECT ck.enqueue('hq', '{"n": 12}') AS j12 \gset
SELECT state, result, error FROM ck.await_job('hq', :j12, '10 ms');
SELECT state FROM ck.await_job('hq', :j12 + 1000, '1 hour');
SELECT ck.await_job('hq', NULL);
SELECT ck.await_job('hq', :j12, NULL);
SELECT ck.await_job('hq', :j12, '-1 second');
SELECT ck.await_job('hq_plain_table', 1, '0');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT ck.await_job('hq', :j12, '0');
ROLLBACK;

-- A member of the owner's role sets the history: the tables belong to the queue's owner.
CREATE ROLE regress_ck_history_owners;
CREATE ROLE regress_ck_history_member IN ROLE regress_ck_history_owners;
GRANT CREATE ON SCHEMA public TO regress_ck_history_owners;
SET ROLE regress_ck_history_owners;
SELECT ck.create_queue('hq_owned') IS NOT NULL AS created;
SET ROLE regress_ck_history_member;
SELECT ck.set_history('hq_owned', '1 day') AS history;
SELECT * FROM ck.maintain_history('hq_owned');
RESET ROLE;
SELECT pg_get_userbyid(relowner) AS owner, count(*) AS tables FROM pg_class
WHERE relname LIKE 'hq_owned_history%' AND relkind IN ('r', 'p') GROUP BY 1;
SELECT ck.drop_queue('hq_owned');
DROP TABLE hq_owned_history;
REVOKE CREATE ON SCHEMA public FROM regress_ck_history_owners;
DROP ROLE regress_ck_history_member;
DROP ROLE regress_ck_history_owners;

-- Labels.
SELECT p.oid::regprocedure, p.provolatile, p.proparallel FROM pg_proc p
WHERE p.oid IN ('ck.set_history(regclass, interval, interval)'::regprocedure, 'ck.maintain_history(regclass)'::regprocedure,
                'ck.history_counts(regclass, timestamptz)'::regprocedure, 'ck.job(regclass, bigint)'::regprocedure,
                'ck.await_job(regclass, bigint, interval)'::regprocedure,
                'ck.complete(regclass, bigint, bigint, jsonb)'::regprocedure,
                'ck.complete_and_claim(regclass, bigint, bigint, integer, interval, jsonb)'::regprocedure)
ORDER BY 1::text;

SELECT ck.drop_queue('hq');
SELECT count(*) AS left_rows FROM ck.history_partitions;
DROP TABLE hq_history;
SELECT ck.drop_queue('plain_q');
DROP TABLE hq_plain_table;
DROP ROLE regress_ck_history_worker;
DROP ROLE regress_ck_history_other;
