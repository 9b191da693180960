-- concurrency_kit 0.4.0 -> 1.0.0: the API follows one set of rules (README, "Rules of the API").
-- A 0.x call either keeps its meaning or fails loudly (42883, or an error naming the 1.0 call);
-- none runs with its arguments read in a new order. The migration table is in README "Upgrading".
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '1.0.0'" to load this file. \quit

------------------------------------------------------------------------------------------
-- Conditional change and optimistic locking
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Advisory locks and row locks
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Queues
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Internals: schema ck_internal (trigger functions, Citus plumbing)
------------------------------------------------------------------------------------------
