-- Queue benchmark, concurrency_kit: the same claim, then acknowledge, through ck.claim (which
-- also sets a lease and a fencing token) and ck.complete (which checks the token).
SELECT id, lease_token FROM ck.claim('jobs') \gset
SELECT ck.complete('jobs', :id::bigint, :lease_token::bigint);
