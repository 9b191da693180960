-- make bench-horizon: after test/bench/sustained/sample.sql in each sample (-v t0, -v claim_index): seconds since
-- :t0, 'index', the table, the claim index's scans, entries read and pages read (hit or read, pg_statio) so far,
-- and the age in XIDs of the oldest XID or snapshot xmin any session holds (the xmin horizon the pin holds back).
SELECT round(extract(epoch FROM clock_timestamp()) - :t0, 1) AS t, 'index', s.relname, s.idx_scan, s.idx_tup_read,
       io.idx_blks_hit + io.idx_blks_read,
       (SELECT coalesce(max(greatest(age(backend_xid), age(backend_xmin))), 0) FROM pg_stat_activity
        WHERE backend_xid IS NOT NULL OR backend_xmin IS NOT NULL)
FROM pg_stat_user_indexes AS s JOIN pg_statio_user_indexes AS io USING (indexrelid)
WHERE s.indexrelid = :'claim_index'::regclass;
