-- make bench-horizon, ck's runs: after index.sql in each sample (-v t0, -v queue): seconds since :t0, 'path', and
-- which way the queue's next claim goes (ck.claim_path, 0.4.0: frontier, discover or full; asked from the sampling
-- session, which claims nothing: what the shared state says of the queue).
SELECT round(extract(epoch FROM clock_timestamp()) - :t0, 1) AS t, 'path', p.path
FROM ck.claim_path(:'queue') AS p;
