-- Installing, uninstalling and what \df ck.* shows (issue 44): the API alone in schema ck,
-- internals in ck_internal; trusted = true (a database owner installs); ck.adopt_queue takes a
-- queue table back after DROP EXTENSION ... CASCADE and CREATE EXTENSION. Each part that
-- installs runs in a database of its own.
SELECT current_database() AS regress_db \gset

-- \df ck.* is the API: a function added to ck that is not in this list fails here (and one
-- that returns trigger, or that only the extension calls, belongs in ck_internal).
SELECT p.proname, count(*) AS forms FROM pg_proc AS p WHERE p.pronamespace = 'ck'::regnamespace
GROUP BY p.proname ORDER BY p.proname;
SELECT count(*) AS trigger_functions_in_ck FROM pg_proc AS p
WHERE p.pronamespace = 'ck'::regnamespace AND p.prorettype = 'trigger'::regtype;
SELECT p.oid::regprocedure AS internal FROM pg_proc AS p WHERE p.pronamespace = 'ck_internal'::regnamespace ORDER BY p.oid::regprocedure::text;
SELECT has_schema_privilege('public', 'ck_internal', 'USAGE') AS public_may_use_ck_internal,
       has_schema_privilege('public', 'ck_internal', 'CREATE') AS public_may_create_in_ck_internal;

-- trusted: the owner of a database, not a superuser, installs; the objects belong to the
-- bootstrap superuser, ck to the owner, and the queue functions work for the owner.
CREATE ROLE regress_ck_owner;
CREATE ROLE regress_ck_nobody;
CREATE DATABASE regress_ck_install OWNER regress_ck_owner;
\c regress_ck_install
SET client_min_messages = warning;
SET ROLE regress_ck_nobody;
\set VERBOSITY sqlstate
CREATE EXTENSION concurrency_kit;
\set VERBOSITY default
SET ROLE regress_ck_owner;
-- the versions before 1.0.0 stay a superuser's to install (their scripts were not written for it)
\set VERBOSITY sqlstate
CREATE EXTENSION concurrency_kit VERSION '0.4.0';
\set VERBOSITY default
CREATE EXTENSION concurrency_kit;
RESET ROLE;
SELECT extversion, pg_get_userbyid(extowner) AS extension_owner FROM pg_extension WHERE extname = 'concurrency_kit';
SELECT n.nspname, pg_get_userbyid(n.nspowner) = 'regress_ck_owner' AS installer_owns_it
FROM pg_namespace AS n WHERE n.nspname IN ('ck', 'ck_internal') ORDER BY 1;
SELECT count(*) FILTER (WHERE r.rolsuper) AS by_superuser, count(*) AS functions
FROM pg_proc AS p JOIN pg_roles AS r ON r.oid = p.proowner WHERE p.pronamespace IN ('ck'::regnamespace, 'ck_internal'::regnamespace);
SET ROLE regress_ck_owner;
SELECT ck.create_queue('owned');
SELECT count(*) AS claimed FROM (SELECT ck.enqueue('owned')) AS e, ck.claim('owned') AS c;
RESET ROLE;
\c :regress_db
DROP DATABASE regress_ck_install;

-- Schema ck made beforehand by a role that is not a superuser could hold objects that capture a
-- name the script (run as superuser) does not qualify: refused (42P06), for a superuser too.
CREATE DATABASE regress_ck_install OWNER regress_ck_owner;
\c regress_ck_install
SET client_min_messages = warning;
SET ROLE regress_ck_owner;
CREATE SCHEMA ck;
CREATE FUNCTION ck.now() RETURNS timestamptz LANGUAGE sql AS 'SELECT pg_catalog.now()';
\set VERBOSITY terse
CREATE EXTENSION concurrency_kit;
RESET ROLE;
CREATE EXTENSION concurrency_kit;
\set VERBOSITY default
-- empty and a superuser's: taken
SET ROLE regress_ck_owner;
DROP SCHEMA ck CASCADE;
RESET ROLE;
CREATE SCHEMA ck;
CREATE EXTENSION concurrency_kit;
SELECT extversion FROM pg_extension WHERE extname = 'concurrency_kit';
\c :regress_db
DROP DATABASE regress_ck_install;

-- adopt_queue: DROP EXTENSION ... CASCADE leaves the queue tables (and their jobs) without
-- registration or triggers; CREATE EXTENSION and ck.adopt_queue take them back.
CREATE DATABASE regress_ck_adopt;
\c regress_ck_adopt
SET client_min_messages = warning;
CREATE EXTENSION concurrency_kit;
SELECT ck.create_queue('mail', lease => '1 hour');
SELECT ck.enqueue('mail', '{"n": "waiting"}', priority => 1) AS waiting \gset
SELECT ck.enqueue('mail', '{"n": "leased"}') AS leased \gset
SELECT id AS leased_id, lease_token AS leased_token FROM ck.claim('mail') \gset
SELECT ck.set_concurrency_limit('mail', 'k', 1);
SELECT ck.enqueue('mail', '{"n": "keyed 1"}', priority => 2, concurrency_key => 'k') AS keyed1 \gset
SELECT ck.enqueue('mail', '{"n": "keyed 2"}', priority => 2, concurrency_key => 'k') AS keyed2 \gset
SELECT ck.enqueue('mail', '{"n": "after"}', priority => 3, after => ARRAY[:waiting]::bigint[]) AS dependant \gset
SELECT ck.enqueue('mail', '{"n": "unique"}', priority => 4, unique_key => 'once') AS unique_job \gset
SELECT id, payload->>'n' AS n, parked_run_at IS NOT NULL AS parked, waiting_for FROM mail ORDER BY id;
DROP EXTENSION concurrency_kit CASCADE;
CREATE EXTENSION concurrency_kit;
SELECT count(*) AS jobs_kept FROM mail;
\set VERBOSITY terse
SELECT * FROM ck.claim('mail');
SELECT ck.create_queue('mail');
\set VERBOSITY default
SELECT ck.adopt_queue('mail', lease => '1 hour');
SELECT queue, dead_letters, lease, max_attempts, notify FROM ck.queues;
SELECT tgname, tgfoid::regprocedure FROM pg_trigger WHERE tgrelid = 'mail'::regclass ORDER BY tgname;
-- what is lost: the dependant (its dependency is gone) is a dead letter saying why; the keyed
-- jobs are both ready (no limit any more); the lease held then is lost: its token is refused.
SELECT id = :dependant AS dependant, last_error FROM mail_dead;
SELECT id, payload->>'n' AS n, parked_run_at IS NOT NULL AS parked, lease_token IS NULL OR lease_token < 0 AS no_lease_now
FROM mail ORDER BY id;
SELECT ck.try_complete('mail', :leased_id, :leased_token) AS old_token_completes;
-- the waiting jobs are claimable again, in order, and complete
SELECT c.id = ANY (ARRAY[:waiting, :keyed1, :keyed2, :unique_job]) AS old_job, c.payload->>'n' AS n, c.attempts,
       ck.complete('mail', c.id, c.lease_token) AS completed
FROM ck.claim('mail', 10) AS c ORDER BY c.id;
-- the unique key is kept by the queue's unique index while its job is there
SELECT ck.enqueue('mail', unique_key => 'held') AS held \gset
SELECT id = :held AS same_job, inserted FROM ck.enqueue_unique('mail', 'held', '{}');
-- the dead dependant comes back, ready
SELECT ck.retry_dead('mail', :dependant) AS revived;
SELECT count(*) AS claimable FROM ck.claim('mail', 10) WHERE id = :dependant;
-- refused: a queue already (42710), a table without a queue's columns (42P16, naming the column)
SELECT ck.adopt_queue('mail');
CREATE TABLE not_a_queue (id bigint PRIMARY KEY, payload jsonb, priority integer, run_at timestamptz);
SELECT ck.adopt_queue('not_a_queue');
SELECT ck.adopt_queue('pg_class');
-- a queue whose dead-letter table went too gets a new one, named as create_queue names it
SELECT ck.create_queue('gone');
SELECT ck.enqueue('gone', '{"n": 1}') AS gone_job \gset
DROP EXTENSION concurrency_kit CASCADE;
DROP TABLE gone_dead;
CREATE EXTENSION concurrency_kit;
SELECT ck.adopt_queue('gone', max_attempts => 1, notify => true);
SELECT dead_letters, max_attempts, notify FROM ck.queues WHERE queue = 'gone'::regclass;
SELECT indexdef FROM pg_indexes WHERE tablename IN ('gone', 'gone_dead') ORDER BY indexdef;
SELECT ck.fail('gone', id, lease_token, 'once') AS outcome FROM ck.claim('gone');
SELECT id = :gone_job AS same_job, last_error FROM gone_dead;
\c :regress_db
DROP DATABASE regress_ck_adopt;
DROP ROLE regress_ck_owner;
DROP ROLE regress_ck_nobody;
