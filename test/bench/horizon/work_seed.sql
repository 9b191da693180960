-- make bench-horizon, a seed worker: test/bench/sustained/work_seed.sql (FOR UPDATE SKIP LOCKED, then DELETE), and
-- the claim also returns the job's wait (ms), which the DELETE's statement writes to horizon_wait, as work_ck.sql.
\if :phase = 0
WITH claimed AS (
    UPDATE tasks SET status = 'running', taken_at = now()
    WHERE id = (SELECT id FROM tasks WHERE status = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id, payload)
SELECT coalesce(max(id), 0) AS id,
       coalesce(round(max(extract(epoch FROM clock_timestamp() - (payload->>'t')::timestamptz) * 1000), 3), 0) AS wait
FROM claimed \gset
\set phase 1
\else
\if :id > 0
WITH done AS (DELETE FROM tasks WHERE id = :id RETURNING 1)
INSERT INTO horizon_wait (wait_ms) SELECT :wait::float8 FROM done;
\else
\sleep 10 ms
\endif
\set phase 0
\endif
