-- Job-timeout benchmark: the same loop on a queue with a timeout (the claim records the deadline,
-- the heartbeat is capped by it, the completion checks it).
SELECT id, lease_token FROM ck.claim('timeouts_timed') \gset
SELECT ck.extend_lease('timeouts_timed', :id::bigint, :lease_token::bigint, '1 minute');
SELECT ck.complete('timeouts_timed', :id::bigint, :lease_token::bigint);
