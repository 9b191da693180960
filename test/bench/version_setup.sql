-- Set-up for the optimistic benchmarks: 10,000 versioned rows (each run uses the first :rows of them) with
-- enough stock never to run out (ck.try_decrement, the conditional side of the rule of thumb).
DROP TABLE IF EXISTS docs;
CREATE TABLE docs (id int PRIMARY KEY, n int NOT NULL DEFAULT 0, qty bigint NOT NULL DEFAULT 1000000000,
                   version bigint NOT NULL DEFAULT 1);
INSERT INTO docs (id) SELECT g FROM generate_series(1, 10000) AS g;
VACUUM ANALYZE docs;
