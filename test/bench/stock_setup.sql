-- Set-up for the stock benchmark: 10,000 rows with enough stock never to run out during a run.
DROP TABLE IF EXISTS stock;
CREATE TABLE stock(sku int PRIMARY KEY, qty bigint NOT NULL);
INSERT INTO stock SELECT sku, 1000000000 FROM generate_series(1, 10000) AS sku;
VACUUM ANALYZE stock;
