-- Pause benchmark, baseline: ck.claim + ck.complete on a queue never paused.
SELECT id, lease_token FROM ck.claim('pause_never') \gset
SELECT ck.complete('pause_never', :id::bigint, :lease_token::bigint);
