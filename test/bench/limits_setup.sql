-- Set-up for the concurrency-limit benchmark: two queues refilled with :backlog jobs each, one
-- without keys (limits_plain) and one whose jobs carry 1,000 concurrency keys, round robin, each
-- limited to 1 (limits_keyed: 1,000 jobs ready, the rest parked behind them).
SELECT ck.create_queue(q) FROM unnest(ARRAY['limits_plain', 'limits_keyed']) AS q WHERE to_regclass(q) IS NULL;
SELECT format('TRUNCATE %I', q), format('DELETE FROM ck.concurrency_slots WHERE queue = %L::regclass', q)
FROM unnest(ARRAY['limits_plain', 'limits_keyed']) AS q \gexec
-- (After the TRUNCATE: the limit recounts the queue's jobs, which took 45 s with the last run's left.)
SELECT ck.set_concurrency_limit('limits_keyed', NULL, 1);
INSERT INTO limits_plain (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, :backlog) AS g;
-- The keyed jobs as ck.enqueue would have placed them, in one statement: the first job of each key takes its
-- slot, the others come parked (their run_at 'infinity'), which the insert trigger leaves as they are. (Jobs
-- inserted ready and parked by the trigger would leave a dead version each, a table three times the plain one's.)
INSERT INTO limits_keyed (payload, concurrency_key, run_at, parked_run_at)
SELECT jsonb_build_object('n', g), 'tenant:' || (g % 1000), CASE WHEN g <= 1000 THEN now() ELSE 'infinity' END,
       CASE WHEN g > 1000 THEN now() END
FROM generate_series(1, :backlog) AS g;
VACUUM ANALYZE limits_plain;
VACUUM ANALYZE limits_keyed;
