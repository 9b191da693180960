-- concurrency_kit 0.3.0 -> 0.3.1: job dependencies (ck.enqueue(..., after)), optimistic versioned
-- updates and row locks taken in key order (ck.update_if_version, ck.version_guard_ddl,
-- ck.lock_rows, ck.lock_audit).
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.3.1'" to load this file. \quit
