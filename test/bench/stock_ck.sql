-- Stock benchmark, concurrency_kit: the same decrement through ck.try_decrement (:skus is set by bench/run.sh).
-- The ::int cast is needed under -M prepared: an untyped parameter cannot stand for the "any" key (42P18).
\set sku random(1, :skus)
\set n 1
SELECT ck.try_decrement('stock', :sku::int, 'qty', :n);
