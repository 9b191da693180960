-- Pause benchmark: the same loop on a queue paused and resumed before the run.
SELECT id, lease_token FROM ck.claim('pause_resumed') \gset
SELECT ck.complete('pause_resumed', :id::bigint, :lease_token::bigint);
