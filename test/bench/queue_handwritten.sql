-- Queue benchmark, baseline: claim the first ready task with FOR UPDATE SKIP LOCKED, then
-- acknowledge it by deleting it, each statement in its own transaction (no lease, no token).
UPDATE tasks SET status = 'running', taken_at = now()
WHERE id = (SELECT id FROM tasks WHERE status = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id \gset
DELETE FROM tasks WHERE id = :id;
