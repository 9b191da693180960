-- make bench-sustained: the two queues, empty, with autovacuum at the server's defaults: ck's queue `sustained` as
-- ck.create_queue makes it, and the seed's table `tasks` with the index its claim needs (as test/bench/queue_setup.sql).
CREATE EXTENSION IF NOT EXISTS concurrency_kit;
SELECT ck.drop_queue(to_regclass('sustained')) WHERE to_regclass('sustained') IS NOT NULL;
SELECT ck.create_queue('sustained');
DROP TABLE IF EXISTS tasks;
CREATE TABLE tasks (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload jsonb NOT NULL DEFAULT '{}',
    status text NOT NULL DEFAULT 'ready',
    taken_at timestamptz
);
CREATE INDEX tasks_ready ON tasks (id) WHERE status = 'ready';
SELECT pg_stat_reset();
