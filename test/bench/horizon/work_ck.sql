-- make bench-horizon, a ck worker: test/bench/sustained/work_ck.sql, and the claim also returns the job's wait
-- (claim time less the enqueue time in its payload, ms), which the completing statement writes to horizon_wait.
-- Odd-numbered transactions of each client (pgbench numbers them from 1) are the claims (latency.awk). pgbench
-- starts each client with -D phase=0 -D id=0 -D token=0 -D wait=0.
\if :phase = 0
SELECT coalesce(max(id), 0) AS id, coalesce(max(lease_token), 0) AS token,
       coalesce(round(max(extract(epoch FROM clock_timestamp() - (payload->>'t')::timestamptz) * 1000), 3), 0) AS wait
FROM ck.claim('sustained') \gset
\set phase 1
\else
\if :id > 0
INSERT INTO horizon_wait (wait_ms) SELECT :wait::float8 FROM ck.complete('sustained', :id::bigint, :token::bigint);
\else
\sleep 10 ms
\endif
\set phase 0
\endif
