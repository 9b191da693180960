-- History benchmark: the same loop on a queue with a history; each completion also writes the job's
-- record (state, attempts, result, payload, timings) in the statement that deletes it.
SELECT id, lease_token FROM ck.claim('history_on') \gset
SELECT ck.complete('history_on', :id::bigint, :lease_token::bigint, '{"ok": true}');
