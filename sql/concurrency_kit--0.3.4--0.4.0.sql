-- concurrency_kit 0.3.4 -> 0.4.0: the shared state (the claim frontier, claim_wait's wake-up on
-- commit, the activity counters) no longer needs the library in shared_preload_libraries: without
-- it, the first use of a queue after the server's start makes it in dynamic shared memory and
-- every backend attaches to it (the library's doing: no SQL change for that). A claim reads all
-- known priorities from their frontiers in one statement, and the frontier keeps 64 priorities
-- (16 before). New: ck.claim_path, which says which way a queue's claims go and why; the comments
-- that said "needs the library preloaded" say what holds now.
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.4.0'" to load this file. \quit

CREATE FUNCTION ck.claim_path(queue regclass, OUT path text, OUT reason text)
RETURNS record
LANGUAGE c VOLATILE PARALLEL RESTRICTED SECURITY INVOKER
AS 'MODULE_PATHNAME', 'ck_claim_path';
COMMENT ON FUNCTION ck.claim_path(regclass) IS
'which way this session''s next claim of the queue goes, and why: frontier (from each priority''s frontier: the cost follows the claimable jobs), discover (the next claim finds the priorities, then as frontier), full (the whole claim index, dead entries included) or distributed (a Citus queue)';

COMMENT ON FUNCTION ck.claim_wait_mode() IS
'how ck.claim_wait learns of new jobs: commit (woken by the committing transaction) or poll (looks again every 10 to 200 ms; only on a server without room for the shared state)';

COMMENT ON FUNCTION ck.claim_frontier(regclass) IS
'where claims of each priority start reading the claim index, (run_at, id) on (NULL run_at: at its beginning; NULL id: from the first job of run_at); no rows while the frontier is not known (no claim yet, reset, more than 64 priorities: ck.claim_path says why)';

COMMENT ON FUNCTION ck.queue_activity() IS
'counters per queue of this database since the shared state appeared (the server''s start when the library is preloaded, else the first use of a queue after it) or since the queue was first used: jobs enqueued, claimed, completed, failed (of which retried and buried), cancelled, counted when their transaction commits; acknowledgements that found the lease lost and duplicate unique keys refused, counted at once';
