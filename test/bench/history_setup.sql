-- Set-up for the history benchmark: two queues refilled with :backlog jobs each, one without a
-- history (history_off) and one keeping its finished jobs for 7 days (history_on, whose history is
-- emptied before every run).
SELECT ck.create_queue(q) FROM unnest(ARRAY['history_off', 'history_on']) AS q WHERE to_regclass(q) IS NULL;
SELECT ck.set_history('history_on', '7 days')
WHERE (SELECT history_retention FROM ck.queues WHERE queue = 'history_on'::regclass) IS NULL;
TRUNCATE history_off, history_on, history_on_history;
INSERT INTO history_off (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, :backlog) AS g;
INSERT INTO history_on (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, :backlog) AS g;
VACUUM ANALYZE history_off;
VACUUM ANALYZE history_on;
