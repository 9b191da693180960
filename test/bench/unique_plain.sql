-- Unique-key benchmark, baseline: ck.enqueue without a key.
SELECT ck.enqueue('jobs', '{"n": 1}');
