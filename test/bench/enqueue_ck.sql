-- Enqueue benchmark: ck.enqueue on a queue with its ck_ready trigger (see enqueue_setup.sql).
SELECT ck.enqueue('jobs', '{"n": 1}');
