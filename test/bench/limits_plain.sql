-- Concurrency-limit benchmark, baseline: claim, then complete, jobs without a concurrency key.
SELECT id, lease_token FROM ck.claim('limits_plain') \gset
SELECT ck.complete('limits_plain', :id::bigint, :lease_token::bigint);
