-- concurrency_kit 1.0.0 -> 1.1.0: the queue in production (issue 47). Every 1.0.0 call keeps
-- its meaning; what is new is opt-in per queue. Names schema-qualified, nothing SECURITY DEFINER
-- (the control file's trusted = true).
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '1.1.0'" to load this file. \quit

------------------------------------------------------------------------------------------
-- Pause and resume
------------------------------------------------------------------------------------------
-- A paused queue's claims return nothing (claim_wait sleeps until the resume's commit or its
-- max_wait); nothing else changes: jobs keep their places, enqueues and acknowledgements go on.
-- The state is ck.queues.paused_at, written by the queue's owner (row-level security, as
-- ck.set_concurrency_limit). The pause waits, bounded by lock_timeout, for the claims already in
-- flight, so that no claim commits after it (src/README.md, "Pause and resume").
ALTER TABLE ck.queues ADD COLUMN paused_at timestamptz;
COMMENT ON COLUMN ck.queues.paused_at IS 'since when the queue''s claims are paused (ck.pause_queue); NULL: not paused';

CREATE FUNCTION ck.pause_queue(queue regclass, concurrency_key text DEFAULT NULL)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_pause_queue';
COMMENT ON FUNCTION ck.pause_queue(regclass, text) IS
'pauses the queue''s claims (they return nothing; claim_wait sleeps) once the claims in flight have ended (waited for up to lock_timeout); running jobs finish, jobs keep their order; false when it was paused already; a concurrency_key is not supported yet (0A000), nor a distributed queue';

CREATE FUNCTION ck.resume_queue(queue regclass, concurrency_key text DEFAULT NULL)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_resume_queue';
COMMENT ON FUNCTION ck.resume_queue(regclass, text) IS
'resumes a paused queue''s claims; claim_wait callers wake at its commit; false when it was not paused';

-- ck.queue_stats gains a last column, paused: its result type changes, so it is made again (a
-- 1.0 call naming its columns reads what it read; SELECT * gets one column more, at the end).
DROP FUNCTION ck.queue_stats(regclass);
CREATE FUNCTION ck.queue_stats(queue regclass,
    OUT ready bigint, OUT scheduled bigint, OUT running bigint, OUT expired bigint, OUT dead bigint,
    OUT oldest_ready_age interval, OUT ready_estimated boolean, OUT paused boolean)
RETURNS record
LANGUAGE c STABLE PARALLEL RESTRICTED SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_queue_stats';
COMMENT ON FUNCTION ck.queue_stats(regclass) IS
'job counts: running, expired, scheduled and dead exact; ready exact up to 10,000, estimated beyond (ready_estimated); paused: claims are paused (ck.pause_queue)';

------------------------------------------------------------------------------------------
-- Rate limits (and ck.try_rate for any SQL)
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Job timeouts, distinct from the lease
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Bulk redrive and purge of dead letters by filter
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- History of finished jobs, results, waiting for a job
------------------------------------------------------------------------------------------
