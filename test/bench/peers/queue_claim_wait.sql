-- make bench-peers: a worker's loop through ck.claim_wait (one job, the queue's lease, at most 1 s of waiting:
-- with a backlog it returns at once) and ck.complete, each in autocommit.
SELECT id, lease_token FROM ck.claim_wait('jobs', 1, NULL, '1 second') \gset
SELECT ck.complete('jobs', :id::bigint, :lease_token::bigint);
