-- Optimistic benchmark, baseline: read the row's version, then the versioned UPDATE written by hand (:rows is
-- set by bench/run.sh). A stale version changes nothing, as with ck.
\set id random(1, :rows)
\set n random(1, 1000000)
SELECT version AS v FROM docs WHERE id = :id \gset
UPDATE docs SET n = :n, version = version + 1 WHERE id = :id AND version = :v RETURNING version;
