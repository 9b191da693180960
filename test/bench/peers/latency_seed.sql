-- make bench-peers, claim latency: the seed's claim (FOR UPDATE SKIP LOCKED), its DELETE, and one new task, so
-- that the backlog of tasks stays at its size; run.sh reads the claim's latency from pgbench -r.
UPDATE tasks SET status = 'running', taken_at = now()
WHERE id = (SELECT id FROM tasks WHERE status = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id \gset
DELETE FROM tasks WHERE id = :id;
INSERT INTO tasks (payload) VALUES ('{"n": 0}');
