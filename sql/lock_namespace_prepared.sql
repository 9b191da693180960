-- A lock namespace registered in a prepared transaction that is rolled back is not remembered: the name is
-- looked up (and registered) again, and the number is the one in the registry. Needs
-- max_prepared_transactions > 0 (make test's cluster); on a server without (PostgreSQL's default, what
-- pg_buildext installcheck makes) PREPARE TRANSACTION fails and lock_namespace_prepared_1.out is the outcome,
-- as PostgreSQL's own prepared_xacts test does (terse: 17 quotes the setting's name in the HINT).
BEGIN;
SELECT ck.lock_namespace('prepared-then-rolled-back') IS NOT NULL AS registered;
\set VERBOSITY terse
PREPARE TRANSACTION 'ck_namespace';
ROLLBACK PREPARED 'ck_namespace';
\set VERBOSITY default
SELECT ck.lock_namespace('prepared-then-rolled-back') AS number \gset
SELECT :number = (SELECT id FROM ck.lock_namespaces WHERE name = 'prepared-then-rolled-back') AS number_in_registry;
