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
-- Each ck script has a queue of its own (jobs: ck.claim and ck.complete, and batches), all made
-- alike: in a mixed run every queue then sees the same share of the claims, and each claim walks
-- only the dead entries that its own script's claims left at the head of the claim index.
SELECT ck.create_queue(q) FROM unnest(ARRAY['jobs', 'jobs_samesql', 'jobs_cac']) AS q WHERE to_regclass(q) IS NULL;
-- The steps between the seed and ck's statements (queue_gap_*.sql): the row of a ck queue with the
-- seed's claim index (ready rows by id), then with ck's claim order (priority, run_at, id).
CREATE TABLE IF NOT EXISTS gap_narrow (LIKE jobs INCLUDING DEFAULTS INCLUDING IDENTITY, PRIMARY KEY (id));
CREATE INDEX IF NOT EXISTS gap_narrow_ready ON gap_narrow (id) WHERE lease_token IS NULL;
CREATE TABLE IF NOT EXISTS gap_wide (LIKE jobs INCLUDING DEFAULTS INCLUDING IDENTITY, PRIMARY KEY (id));
CREATE INDEX IF NOT EXISTS gap_wide_ready ON gap_wide (priority, run_at, id) WHERE lease_token IS NULL;
-- Only the queues that :script (the pgbench scripts about to run) use are refilled.
SELECT format('TRUNCATE %I', q),
       format('INSERT INTO %I (payload) SELECT jsonb_build_object(''n'', g) FROM generate_series(1, %s) AS g', q, :backlog),
       format('VACUUM ANALYZE %I', q)
FROM (VALUES ('tasks', :'script' LIKE '%handwritten%'),
             ('jobs', :'script' ~ 'queue_(ck|batch)'),
             ('jobs_samesql', :'script' LIKE '%samesql%'),
             ('jobs_cac', :'script' LIKE '%queue_cac%'),
             ('gap_narrow', :'script' LIKE '%gap_narrow%'),
             ('gap_wide', :'script' LIKE '%gap_wide%')) AS uses(q, refill)
WHERE refill \gexec
