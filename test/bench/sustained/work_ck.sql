-- make bench-sustained, a ck worker. Its pgbench transactions alternate: a claim (the client's odd-numbered
-- transactions in pgbench's log, which numbers them from 1; latency.awk reads the claim's latency from them), then
-- the job's completion, or a 10 ms pause when the claim found no job. pgbench starts each client with -D phase=0 -D id=0 -D token=0.
\if :phase = 0
SELECT coalesce(max(id), 0) AS id, coalesce(max(lease_token), 0) AS token FROM ck.claim('sustained') \gset
\set phase 1
\else
\if :id > 0
SELECT ck.complete('sustained', :id::bigint, :token::bigint);
\else
\sleep 10 ms
\endif
\set phase 0
\endif
