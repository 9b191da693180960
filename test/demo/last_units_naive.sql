-- pgbench script for the demo's first act: sell one unit the naive way (read, check, write back).
BEGIN;
SELECT qty FROM stock WHERE sku = 1 \gset
\if :qty > 0
UPDATE stock SET qty = :qty - 1 WHERE sku = 1;
INSERT INTO sales(sku) VALUES (1);
\endif
COMMIT;
