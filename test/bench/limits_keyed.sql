-- Concurrency-limit benchmark: the same loop over jobs of 1,000 keys limited to 1 each; every
-- completion hands its key's slot to the next job of the key.
SELECT id, lease_token FROM ck.claim('limits_keyed') \gset
SELECT ck.complete('limits_keyed', :id::bigint, :lease_token::bigint);
