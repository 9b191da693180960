-- Queue benchmark, size: drain queue `big` a hundred jobs at a time (claim 100, then complete
-- them all in one statement with ck.complete_many).
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(lease_token), '{}') AS tokens
FROM ck.claim('big', 100) \gset
SELECT count(*) FROM ck.complete_many('big', :ids::bigint[], :tokens::bigint[]);
