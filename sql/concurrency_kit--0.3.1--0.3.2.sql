-- concurrency_kit 0.3.1 -> 0.3.2: queues distributed over a Citus cluster (ck.distribute_queue)
-- and the calls that check a Citus deployment.
\echo Use "ALTER EXTENSION concurrency_kit UPDATE TO '0.3.2'" to load this file. \quit
