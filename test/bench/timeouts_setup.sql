-- Set-up for the job-timeout benchmark: two queues refilled with :backlog jobs each, one without a
-- timeout (timeouts_plain) and one with a timeout of an hour (timeouts_timed: every claim records
-- its attempt's deadline and caps its lease; none is reached during a run).
SELECT ck.create_queue(q) FROM unnest(ARRAY['timeouts_plain', 'timeouts_timed']) AS q WHERE to_regclass(q) IS NULL;
UPDATE ck.queues SET timeout = '1 hour' WHERE queue = 'timeouts_timed'::regclass AND timeout IS NULL;
TRUNCATE timeouts_plain, timeouts_timed;
INSERT INTO timeouts_plain (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, :backlog) AS g;
INSERT INTO timeouts_timed (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, :backlog) AS g;
VACUUM ANALYZE timeouts_plain;
VACUUM ANALYZE timeouts_timed;
