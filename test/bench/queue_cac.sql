-- Queue benchmark, a worker's loop through ck.complete_and_claim: one call (one round trip,
-- one transaction) completes the job the client holds and claims its next one. The client's
-- first transaction claims with ck.claim (bench/run.sh starts every client with job = 0).
\if :job = 0
SELECT id AS job, lease_token AS token FROM ck.claim('jobs_cac') \gset
\else
SELECT id AS job, lease_token AS token FROM ck.complete_and_claim('jobs_cac', :job::bigint, :token::bigint) \gset
\endif
