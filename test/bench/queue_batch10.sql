-- Queue benchmark, batches: claim ten jobs in one statement, then acknowledge all ten in one
-- statement with ck.complete_many, as a worker that processes a batch does (a transaction here
-- is ten jobs).
SELECT array_agg(id) AS ids, array_agg(lease_token) AS tokens FROM ck.claim('jobs', 10) \gset
SELECT count(*) FROM ck.complete_many('jobs', :ids::bigint[], :tokens::bigint[]);
