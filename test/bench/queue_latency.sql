-- Queue benchmark, claim latency: claim, complete and enqueue a new job, so that the backlog of
-- queue `latency` stays at its size; bench/run.sh reads the claim's latency from pgbench -r.
SELECT id, lease_token FROM ck.claim('latency') \gset
SELECT ck.complete('latency', :id::bigint, :lease_token::bigint);
SELECT ck.enqueue('latency', '{"n": 0}');
