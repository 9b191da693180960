-- Unique-key benchmark: ck.enqueue with a key; one call in 10 repeats a key already taken
-- (a duplicate: nothing inserted, the holder's id returned).
\set k random(1, 1000000000)
\set dup random(1, 10)
SELECT ck.enqueue('jobs', '{"n": 1}', unique_key => CASE WHEN :dup = 1 THEN 'dup' ELSE :k::text END);
