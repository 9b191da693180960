-- make bench-sustained: one sample of both queues (run.sh takes one every 10 s): seconds since :t0 (epoch), then
-- per table: jobs done (deleted), jobs enqueued, heap size (pg_table_size: heap, FSM, VM, TOAST), index size,
-- dead and live tuples, autovacuum passes so far, and whether an autovacuum is running on it now.
SELECT round(extract(epoch FROM clock_timestamp()) - :t0, 1) AS t, s.relname, s.n_tup_del, s.n_tup_ins,
       pg_table_size(s.relid), pg_indexes_size(s.relid), s.n_dead_tup, s.n_live_tup, s.autovacuum_count,
       EXISTS (SELECT FROM pg_stat_progress_vacuum v WHERE v.relid = s.relid)::int
FROM pg_stat_user_tables s
WHERE s.relname IN ('sustained', 'tasks')
ORDER BY s.relname;
