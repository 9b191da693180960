-- make bench-peers, PgQ: PgQ's batch consumer, one pgbench client per queue (client N reads bench_pgq_N+1):
-- take the next batch (the events between two ticks), read its events (a no-op handler), close the batch; one
-- transaction per batch, as PgQ's own consumers do.
BEGIN;
SELECT coalesce(pgq.next_batch('bench_pgq_' || (:client_id + 1), 'bench'), 0) AS batch \gset
\if :batch > 0
SELECT ev_id, ev_data FROM pgq.get_batch_events(:batch);
SELECT pgq.finish_batch(:batch);
\endif
COMMIT;
