-- Set-up for the pause benchmark: two queues refilled with :backlog jobs each, one never paused
-- (pause_never) and one paused and resumed here (pause_resumed): claims of both run the same gate
-- (signal/pause.hpp), and a pause once lifted must leave nothing behind on the claim path.
SELECT ck.create_queue(q) FROM unnest(ARRAY['pause_never', 'pause_resumed']) AS q WHERE to_regclass(q) IS NULL;
SELECT format('TRUNCATE %I', q) FROM unnest(ARRAY['pause_never', 'pause_resumed']) AS q \gexec
SELECT ck.pause_queue('pause_resumed') IS NOT NULL AS paused, ck.resume_queue('pause_resumed') AS resumed;
INSERT INTO pause_never (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, :backlog) AS g;
INSERT INTO pause_resumed (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, :backlog) AS g;
VACUUM ANALYZE pause_never;
VACUUM ANALYZE pause_resumed;
