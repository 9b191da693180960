-- History benchmark, baseline: claim, then complete with a result, on a queue without a history
-- (the result is not kept).
SELECT id, lease_token FROM ck.claim('history_off') \gset
SELECT ck.complete('history_off', :id::bigint, :lease_token::bigint, '{"ok": true}');
