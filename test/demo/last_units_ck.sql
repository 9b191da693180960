-- pgbench script for the demo's first act: sell one unit with ck.try_decrement (check and decrement in one step).
INSERT INTO sales(sku) SELECT 1 WHERE ck.try_decrement('stock', 1, 'qty', 1) IS NOT NULL;
