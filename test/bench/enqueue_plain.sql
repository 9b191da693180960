-- Enqueue benchmark, baseline: ck.enqueue on the same queue without the ck_ready trigger.
SELECT ck.enqueue('jobs_plain', '{"n": 1}');
