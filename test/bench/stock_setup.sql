-- Set-up for the stock benchmark: 10,000 rows with enough stock never to run out during a run.
DROP TABLE IF EXISTS stock;
CREATE TABLE stock(sku int PRIMARY KEY, qty bigint NOT NULL);
INSERT INTO stock SELECT sku, 1000000000 FROM generate_series(1, 10000) AS sku;
VACUUM ANALYZE stock;
-- The same C function as ck.try_decrement, declared with the SET clause that 0.1.0 had (clause_cost in run.sh).
CREATE SCHEMA IF NOT EXISTS bench;
CREATE OR REPLACE FUNCTION bench.try_decrement_pinned(tbl regclass, key "any", col name, amount bigint DEFAULT 1,
                                                      key_column name DEFAULT NULL)
RETURNS bigint LANGUAGE c VOLATILE SET search_path = pg_catalog, pg_temp
AS '$libdir/concurrency_kit', 'ck_try_decrement_v1';
