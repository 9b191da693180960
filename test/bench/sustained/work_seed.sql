-- make bench-sustained, a seed worker: the seed statement (FOR UPDATE SKIP LOCKED) as the claim, then DELETE;
-- its pgbench transactions alternate as in work_ck.sql (the claim is wrapped so that it always returns a row).
\if :phase = 0
WITH claimed AS (
    UPDATE tasks SET status = 'running', taken_at = now()
    WHERE id = (SELECT id FROM tasks WHERE status = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id)
SELECT coalesce(max(id), 0) AS id FROM claimed \gset
\set phase 1
\else
\if :id > 0
DELETE FROM tasks WHERE id = :id;
\else
\sleep 10 ms
\endif
\set phase 0
\endif
