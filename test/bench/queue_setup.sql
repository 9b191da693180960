-- Set-up for the queue benchmarks: a queue refilled with :backlog ready jobs (bench/run.sh passes
-- 20,000 per second of run), more than any run drains, so that every claim finds a job (an empty
-- \gset would stop a pgbench client). The hand-written queue gets the index its claim needs:
-- ready tasks in id order.
CREATE TABLE IF NOT EXISTS tasks (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload jsonb NOT NULL DEFAULT '{}',
    status text NOT NULL DEFAULT 'ready',
    taken_at timestamptz
);
CREATE INDEX IF NOT EXISTS tasks_ready ON tasks (id) WHERE status = 'ready';
SELECT FROM ck.create_queue('jobs') WHERE to_regclass('jobs') IS NULL;
-- Only the queues that :script (the pgbench scripts about to run) use are refilled.
SELECT :'script' LIKE '%handwritten%' AS tasks, :'script' ~ 'queue_(ck|batch|cac|samesql)' AS jobs \gset
\if :tasks
TRUNCATE tasks;
INSERT INTO tasks (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, :backlog) AS g;
VACUUM ANALYZE tasks;
\endif
\if :jobs
TRUNCATE jobs;
INSERT INTO jobs (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, :backlog) AS g;
VACUUM ANALYZE jobs;
\endif
