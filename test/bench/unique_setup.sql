-- Set-up for the unique-key enqueue benchmark: an empty queue jobs as ck.create_queue makes it.
SELECT FROM ck.create_queue('jobs') WHERE to_regclass('jobs') IS NULL;
TRUNCATE jobs;
