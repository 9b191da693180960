-- The claim frontier (make test runs the suite with the library preloaded and without): where each
-- priority's claims start, the order they keep, what makes the frontier start over, and the periodic full
-- claim that finds what no trigger saw; ck.claim_path, which says which way claims go. The concurrent cases
-- are test/specs/queue_frontier_race.spec.
SET concurrency_kit.full_claim_interval = '1h';
SELECT ck.create_queue('fq') IS NOT NULL AS created;
SELECT count(*) AS known_before_any_claim FROM ck_internal.claim_frontier('fq');
SELECT * FROM ck.claim_path('fq');
INSERT INTO fq (id, priority, run_at) VALUES (1, 0, now() - interval '3 minutes'), (2, 0, now() - interval '2 minutes'),
    (3, 1, now() - interval '1 minute'), (4, 0, now() + interval '1 hour'), (5, -1, now() - interval '1 second');

-- Claims go by priority, then run_at, then id, across priorities as within one.
SELECT id FROM ck.claim('fq', 1);
SELECT priority, run_at IS NULL AS at_start, id FROM ck_internal.claim_frontier('fq') ORDER BY priority;
SELECT * FROM ck.claim_path('fq');
SELECT array_agg(id) AS next_three FROM ck.claim('fq', 3);
-- Priority -1 and 0 came back short: their frontier is the claim's moment (any id); 1 is at job 3.
SELECT priority, run_at > now() - interval '1 second' AS at_moment, id FROM ck_internal.claim_frontier('fq') ORDER BY priority;
SELECT count(*) AS claimable_left FROM ck.claim('fq', 10);
-- A job scheduled for later, of a priority the frontier has not seen: it learns the priority
-- when the insert commits, so claims look there once the job is due.
INSERT INTO fq (id, priority, run_at) VALUES (8, 7, now() + interval '1 hour');
SELECT priority, run_at > now() AS from_the_job FROM ck_internal.claim_frontier('fq') WHERE priority = 7;

-- A claim under REPEATABLE READ reads the whole index with its transaction's snapshot and
-- moves no frontier.
INSERT INTO fq (id, priority, run_at) VALUES (6, 0, now() - interval '10 minutes');
CREATE TEMP TABLE before_rr AS SELECT * FROM ck_internal.claim_frontier('fq');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT id FROM ck.claim('fq', 5);
SELECT count(*) AS frontier_unchanged FROM ck_internal.claim_frontier('fq') NATURAL JOIN before_rr;
SELECT * FROM ck.claim_path('fq');
COMMIT;

-- A plain UPDATE of jobs (here: job 4 made due, below every frontier) forgets the frontier when
-- its transaction ends; the next claim finds the priorities again and job 4.
BEGIN;
UPDATE fq SET run_at = now() - interval '1 day' WHERE id = 4;
SELECT count(*) AS known_in_the_transaction FROM ck_internal.claim_frontier('fq');
COMMIT;
SELECT count(*) AS known_after_commit FROM ck_internal.claim_frontier('fq');
SELECT * FROM ck.claim_path('fq');
SELECT id FROM ck.claim('fq', 5);
SELECT priority FROM ck_internal.claim_frontier('fq') ORDER BY priority;
-- So does a rolled-back one (the rows it locked were passed by other claims meanwhile).
BEGIN;
DELETE FROM fq WHERE id = 1;
ROLLBACK;
SELECT count(*) AS known_after_rollback FROM ck_internal.claim_frontier('fq');
SELECT count(*) AS claimable FROM ck.claim('fq');

-- So does a change of the queue's settings (a higher max_attempts makes skipped jobs claimable).
SELECT count(*) > 0 AS known FROM ck_internal.claim_frontier('fq');
UPDATE ck.queues SET max_attempts = 6 WHERE queue = 'fq'::regclass;
SELECT count(*) AS known_after_settings FROM ck_internal.claim_frontier('fq');

-- Jobs inserted through a trigger without a transition table (as before 0.2.2): no key to
-- learn, so the frontier starts over.
SELECT count(*) FROM ck.claim('fq');
SELECT count(*) > 0 AS known FROM ck_internal.claim_frontier('fq');
DROP TRIGGER ck_ready ON fq;
CREATE TRIGGER ck_ready AFTER INSERT ON fq FOR EACH STATEMENT EXECUTE FUNCTION ck_internal.queue_ready();
INSERT INTO fq (id) VALUES (7);
SELECT count(*) AS known_after_insert FROM ck_internal.claim_frontier('fq');
SELECT id FROM ck.claim('fq');
DROP TRIGGER ck_ready ON fq;
CREATE TRIGGER ck_ready AFTER INSERT ON fq REFERENCING NEW TABLE AS ck_new FOR EACH STATEMENT EXECUTE FUNCTION ck_internal.queue_ready();

-- What no trigger sees (here: triggers off under session_replication_role = replica, job 2's
-- lease handed back by hand, below the frontier) the periodic full claim finds; finding it,
-- it lowers the frontier to it.
SELECT count(*) FROM ck.claim('fq', 10);
SET session_replication_role = replica;
UPDATE fq SET run_at = now() - interval '1 day', lease_token = NULL WHERE id = 2;
RESET session_replication_role;
SELECT count(*) AS missed_by_the_frontier FROM ck.claim('fq');
SET concurrency_kit.full_claim_interval = '1ms';
SELECT pg_sleep(0.005);
SELECT id AS found_by_the_full_claim FROM ck.claim('fq');
SELECT run_at < now() - interval '23 hours' AS lowered_to_the_job FROM ck_internal.claim_frontier('fq') WHERE priority = 0;
SET concurrency_kit.full_claim_interval = '1h';
-- A missed job in a priority after the one the full claim takes from: the full claim also lowers
-- each priority it did not reach to that priority's first claimable job, so the next claim takes
-- the missed job 11 before job 12, which came after it.
DELETE FROM fq;
INSERT INTO fq (id, priority) VALUES (11, 5), (12, 5);
SELECT array_agg(id) AS claimed FROM ck.claim('fq', 2);
INSERT INTO fq (id, priority) VALUES (13, 5), (14, 1);
SET session_replication_role = replica;
UPDATE fq SET run_at = now() - interval '1 day', lease_token = NULL WHERE id = 11;
RESET session_replication_role;
SET concurrency_kit.full_claim_interval = '1ms';
SELECT pg_sleep(0.005);
SELECT id AS taken_by_the_full_claim FROM ck.claim('fq');
SET concurrency_kit.full_claim_interval = '1h';
SELECT run_at < now() - interval '23 hours' AS priority_5_lowered FROM ck_internal.claim_frontier('fq') WHERE priority = 5;
SELECT array_agg(id) AS next_from_the_frontier FROM ck.claim('fq', 2);

-- As many priorities as the frontier keeps (64): one statement reads them in order, each from its
-- frontier; the batch fills across priorities, and those it left behind empty advance to the moment.
-- (A plain DELETE makes the frontier start over; a TRUNCATE, which no trigger sees, would leave it
-- knowing the priorities above, and 64 more would be too many.)
DELETE FROM fq;
INSERT INTO fq (priority) SELECT 100 - g FROM generate_series(1, 64) AS g;
SELECT array_agg(p.priority ORDER BY c.n) AS priorities_in_claim_order
FROM ck.claim('fq', 4) WITH ORDINALITY AS c (id, lease_token, attempts, payload, lease_until, n) JOIN fq AS p ON p.id = c.id;
SELECT count(*) AS known_with_64_priorities, count(*) FILTER (WHERE run_at IS NOT NULL AND id IS NULL) AS left_empty,
       count(*) FILTER (WHERE id IS NOT NULL) AS at_a_job FROM ck_internal.claim_frontier('fq');
SELECT * FROM ck.claim_path('fq');
SELECT array_agg(p.priority ORDER BY c.n) AS next_in_claim_order
FROM ck.claim('fq', 3) WITH ORDINALITY AS c (id, lease_token, attempts, payload, lease_until, n) JOIN fq AS p ON p.id = c.id;
-- One more than it keeps: every claim reads the whole index, in order.
TRUNCATE fq;
INSERT INTO fq (priority) SELECT 100 - g FROM generate_series(1, 65) AS g;
SELECT array_agg(p.priority ORDER BY c.n) AS priorities_in_claim_order
FROM ck.claim('fq', 4) WITH ORDINALITY AS c (id, lease_token, attempts, payload, lease_until, n) JOIN fq AS p ON p.id = c.id;
SELECT count(*) AS known_with_65_priorities FROM ck_internal.claim_frontier('fq');
SELECT * FROM ck.claim_path('fq');

-- full_claim_interval = 0 turns the frontier off for the session's claims.
TRUNCATE fq;
SET concurrency_kit.full_claim_interval = 0;
INSERT INTO fq DEFAULT VALUES;
SELECT count(*) AS claimed FROM ck.claim('fq');
SELECT * FROM ck.claim_path('fq');
-- A queue made then says so: its claims would walk the dead entries a held horizon keeps.
SELECT ck.create_queue('fq_full') IS NOT NULL AS created;
SELECT ck.drop_queue('fq_full');
RESET concurrency_kit.full_claim_interval;
SELECT setting, unit FROM pg_settings WHERE name = 'concurrency_kit.full_claim_interval';
SELECT split_part(test.outcome($$SET concurrency_kit.full_claim_interval = -1$$), ':', 1) AS out_of_range;
SELECT test.outcome($$SET concurrency_kit.no_such_setting = 1$$);

-- Errors.
SELECT test.outcome($$SELECT * FROM ck_internal.claim_frontier(NULL)$$);
SELECT test.outcome($$SELECT * FROM ck.claim_path(NULL)$$);
CREATE TABLE frontier_plain (id int);
SELECT test.outcome($$SELECT * FROM ck_internal.claim_frontier('frontier_plain')$$);
SELECT test.outcome($$SELECT * FROM ck.claim_path('frontier_plain')$$);
CREATE ROLE frontier_reader;
GRANT USAGE ON SCHEMA test TO frontier_reader;
SET ROLE frontier_reader;
SELECT test.outcome($$SELECT * FROM ck_internal.claim_frontier('fq')$$);
SELECT test.outcome($$SELECT * FROM ck.claim_path('fq')$$);
RESET ROLE;
REVOKE USAGE ON SCHEMA test FROM frontier_reader;
DROP ROLE frontier_reader;
SELECT test.outcome($$SELECT ck_internal.queue_changed()$$);
DROP TABLE frontier_plain;
SELECT ck.drop_queue('fq');
