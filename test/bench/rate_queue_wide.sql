-- Queue rate-limit benchmark: claim, then complete, from rate_queue_wide (rate_queue_setup.sql says what it holds).
SELECT id, lease_token FROM ck.claim('rate_queue_wide') \gset
SELECT ck.complete('rate_queue_wide', :id::bigint, :lease_token::bigint);
