-- Set-up for the queue rate-limit benchmark: three queues refilled with :backlog jobs each, all of
-- 1,000 concurrency keys round robin but the last: rate_queue_plain (no limit), rate_queue_keyed
-- (every key at most 10,000 starts a second: under it, about 2 to 15 a second each) and rate_queue_wide
-- (jobs without a key, 1,000,000 a second for all of them together: under it too, where 2 CPUs claim
-- 15,000 a second at most; at 10,000 the quiet machine's 4 clients reached it and runs stopped empty).
SELECT ck.create_queue(q) FROM unnest(ARRAY['rate_queue_plain', 'rate_queue_keyed', 'rate_queue_wide']) AS q
WHERE to_regclass(q) IS NULL;
SELECT format('TRUNCATE %I', q) FROM unnest(ARRAY['rate_queue_plain', 'rate_queue_keyed', 'rate_queue_wide']) AS q \gexec
DELETE FROM ck.rate_starts;
SELECT ck.set_rate_limit('rate_queue_keyed', NULL, 10000, '1 second');
SELECT ck.set_rate_limit('rate_queue_wide', NULL, 1000000, '1 second');
INSERT INTO rate_queue_plain (payload, concurrency_key)
SELECT jsonb_build_object('n', g), 'tenant:' || (g % 1000) FROM generate_series(1, :backlog) AS g;
INSERT INTO rate_queue_keyed (payload, concurrency_key)
SELECT jsonb_build_object('n', g), 'tenant:' || (g % 1000) FROM generate_series(1, :backlog) AS g;
INSERT INTO rate_queue_wide (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, :backlog) AS g;
-- Every key has started jobs before (the steady state the runs measure, not a key's first start,
-- which also inserts its row of ck.rate_starts once): one claim of a job of each key, in every
-- queue alike; those 1,000 jobs stay leased through the run.
SELECT count(*) FROM unnest(ARRAY['rate_queue_plain', 'rate_queue_keyed', 'rate_queue_wide']) AS q,
    LATERAL ck.claim(q::regclass, 1000) AS c;
VACUUM ANALYZE rate_queue_plain;
VACUUM ANALYZE rate_queue_keyed;
VACUUM ANALYZE rate_queue_wide;
