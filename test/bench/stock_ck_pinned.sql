-- Stock benchmark: ck.try_decrement's C function behind 0.1.0's SET search_path clause (see stock_setup.sql).
\set sku random(1, :skus)
\set n 1
SELECT bench.try_decrement_pinned('stock', :sku::int, 'qty', :n);
