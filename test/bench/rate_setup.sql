-- Set-up for the rate benchmark: the keys bench:1 .. bench:10000 in ck.rates, none counted yet
-- (both sides update an existing row: the first call of a key, an insert, is not measured).
DELETE FROM ck.rates WHERE key LIKE 'bench:%';
INSERT INTO ck.rates (key, width, bucket, total, marks)
SELECT 'bench:' || g, 100000, 0, 0, array_fill(0::bigint, ARRAY[11]) FROM generate_series(1, 10000) AS g;
VACUUM ck.rates;
