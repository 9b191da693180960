-- Set-up for the enqueue benchmark: queue jobs as ck.create_queue makes it (with the ck_ready
-- statement trigger that wakes ck.claim_wait) and queue jobs_plain, the same without the trigger.
SELECT FROM ck.create_queue('jobs') WHERE to_regclass('jobs') IS NULL;
SELECT FROM ck.create_queue('jobs_plain') WHERE to_regclass('jobs_plain') IS NULL;
DROP TRIGGER IF EXISTS ck_ready ON jobs_plain;
TRUNCATE jobs, jobs_plain;
