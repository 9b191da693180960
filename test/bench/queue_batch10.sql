-- Queue benchmark, batches: claim ten jobs in one statement, then complete each in its own
-- statement, as queue_ck.sql does for one (a transaction here is ten jobs).
SELECT array_agg(id) AS ids, array_agg(lease_token) AS tokens FROM ck.claim('jobs', 10) \gset
SELECT ck.complete('jobs', (:ids::bigint[])[1], (:tokens::bigint[])[1]);
SELECT ck.complete('jobs', (:ids::bigint[])[2], (:tokens::bigint[])[2]);
SELECT ck.complete('jobs', (:ids::bigint[])[3], (:tokens::bigint[])[3]);
SELECT ck.complete('jobs', (:ids::bigint[])[4], (:tokens::bigint[])[4]);
SELECT ck.complete('jobs', (:ids::bigint[])[5], (:tokens::bigint[])[5]);
SELECT ck.complete('jobs', (:ids::bigint[])[6], (:tokens::bigint[])[6]);
SELECT ck.complete('jobs', (:ids::bigint[])[7], (:tokens::bigint[])[7]);
SELECT ck.complete('jobs', (:ids::bigint[])[8], (:tokens::bigint[])[8]);
SELECT ck.complete('jobs', (:ids::bigint[])[9], (:tokens::bigint[])[9]);
SELECT ck.complete('jobs', (:ids::bigint[])[10], (:tokens::bigint[])[10]);
