-- Stock benchmark, baseline: the conditional decrement written by hand (:skus is set by bench/run.sh).
\set sku random(1, :skus)
\set n 1
UPDATE stock SET qty = qty - :n WHERE sku = :sku AND qty >= :n;
