-- Job-timeout benchmark, baseline: claim, heartbeat, then complete, on a queue without a timeout.
SELECT id, lease_token FROM ck.claim('timeouts_plain') \gset
SELECT ck.extend_lease('timeouts_plain', :id::bigint, :lease_token::bigint, '1 minute');
SELECT ck.complete('timeouts_plain', :id::bigint, :lease_token::bigint);
