-- Schema for the language workers (test/client/*_worker.sh) and the PgBouncer run: one
-- database each, set up with psql -v jobs=N. Every part's expected outcome is checked by lib/tap.sh.
CREATE EXTENSION concurrency_kit;

-- Queue: a 1 s lease; "slow" jobs run 2.5 s and heartbeat, "flaky" ones raise on attempt 1.
SELECT FROM ck.create_queue('jobs', lease => '1 second', max_attempts => 5);
-- Its history: each worker completes a job with the result {"attempt": ..., "worker": ...}.
SELECT FROM ck.set_history('jobs', '1 day');
CREATE TABLE enqueued (job_id bigint PRIMARY KEY, n int NOT NULL, kind text NOT NULL);
-- A job's effect, written in the transaction that completes it. No unique constraint: a
-- duplicate must show up in the counts, not as an error.
CREATE TABLE effects (job_id bigint NOT NULL, n int NOT NULL, attempt int NOT NULL, worker int NOT NULL,
                      held_ms bigint NOT NULL, done_at timestamptz NOT NULL DEFAULT clock_timestamp());
-- Each ck.fail, with what it returned, written in the transaction that calls it.
CREATE TABLE failures (job_id bigint NOT NULL, attempt int NOT NULL, outcome text NOT NULL);
INSERT INTO enqueued
SELECT ck.enqueue('jobs', jsonb_build_object('n', g, 'kind', k.kind)), g, k.kind
FROM generate_series(1, :jobs) AS g,
     LATERAL (SELECT CASE WHEN g % 500 = 250 THEN 'slow' WHEN g % 100 = 37 THEN 'flaky' ELSE 'plain' END AS kind) AS k;

-- Dependencies: the workflow a worker test enqueues into "jobs" (a fan-out and a fan-in), each
-- job with the ids it waits for; its order is checked against effects by dependency_checks.
CREATE TABLE workflow (job_id bigint PRIMARY KEY, step text NOT NULL, after bigint[] NOT NULL);

-- Decrement: 3 units of sku 7, 30 of sku 42.
CREATE TABLE stock (sku int PRIMARY KEY, qty int NOT NULL);
INSERT INTO stock VALUES (7, 3), (42, 30);

-- Optimistic edits: one profile, its visits counted by read-modify-write through its version.
CREATE TABLE profiles (id int PRIMARY KEY, visits int NOT NULL, note text NOT NULL, version bigint NOT NULL);
INSERT INTO profiles VALUES (1, 0, '', 1), (2, 0, '', 1);

-- Locks: namespaces created once, up front and in autocommit, as a migration would, before any worker
-- starts: a lock call by name never creates one (42704 for a name never created).
SELECT FROM ck.lock_namespace('relay');
SELECT FROM ck.lock_namespace('leader');
SELECT FROM ck.lock_namespace('bouncer_ns');

-- Retry: 20 seats of show 7; attempt is ck.current_attempt() of the transaction that took the seat.
CREATE TABLE seats (show_id int NOT NULL, customer text PRIMARY KEY, attempt int NOT NULL);

-- PgBouncer: per-backend caches.
CREATE TABLE cache_stock (sku int PRIMARY KEY, qty int NOT NULL);
INSERT INTO cache_stock VALUES (1, 100);
SELECT FROM ck.create_queue('cache_q', lease => '30 seconds');
SELECT ck.enqueue('cache_q') FROM generate_series(1, 4);
