-- Optimistic benchmark, concurrency_kit: read the row's version, then ck.try_update_if_version (:rows is set by
-- bench/run.sh). The ::int cast types the "any" key under -M prepared.
\set id random(1, :rows)
\set n random(1, 1000000)
SELECT version AS v FROM docs WHERE id = :id \gset
SELECT ck.try_update_if_version('docs', :id::int, :v, jsonb_build_object('n', :n::int));
