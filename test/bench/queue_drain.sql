-- Queue benchmark, size: drain queue `big` a hundred jobs at a time (claim 100, then complete
-- them all in one statement).
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(lease_token), '{}') AS tokens
FROM ck.claim('big', 100) \gset
SELECT count(*) FILTER (WHERE ck.complete('big', j.id, j.token))
FROM unnest(:ids::bigint[], :tokens::bigint[]) AS j(id, token);
