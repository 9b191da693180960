-- The history's counts at size: :rows finished jobs spread over the last 7 days in hourly
-- partitions (made here as ck.maintain_history would have made them, one per hour), sealed by one
-- maintenance run; then ck.history_counts (every period and state) timed 20 times, against one
-- count(*) ... GROUP BY state over the whole history. Prints: rows, partitions, seal ms,
-- median and max ms of ck.history_counts, ms of the plain count.
SELECT ck.create_queue('history_big') WHERE to_regclass('history_big') IS NULL;
SELECT ck.set_history('history_big', '7 days') IS NOT NULL AS history_on;
TRUNCATE history_big_history;
DO $$
DECLARE
    s timestamptz;
    hour timestamptz := to_timestamp(floor(extract(epoch FROM clock_timestamp()) / 3600) * 3600);
    name text;
BEGIN
    FOR s IN SELECT generate_series(hour - interval '167 hours', hour - interval '1 hour', interval '1 hour') LOOP
        IF NOT EXISTS (SELECT FROM ck.history_partitions WHERE queue = 'history_big'::regclass AND starts = s) THEN
            name := 'history_big_history_past_' || extract(epoch FROM s)::bigint;
            EXECUTE format('CREATE TABLE %I (LIKE history_big_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
            EXECUTE format('ALTER TABLE history_big_history ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', name, s, s + interval '1 hour');
            INSERT INTO ck.history_partitions (queue, partition, starts, ends) VALUES ('history_big', name::regclass, s, s + interval '1 hour');
        END IF;
    END LOOP;
    UPDATE ck.history_partitions SET sealed = false WHERE queue = 'history_big'::regclass;
END
$$;
-- Three in five completed, one buried, one cancelled; finished evenly over the 167 hours before this one and
-- the part of this one gone by.
INSERT INTO history_big_history (id, state, attempts, error, result, payload, enqueued_at, finished_at)
SELECT g, (ARRAY['completed', 'completed', 'completed', 'buried', 'cancelled'])[1 + g % 5], 1, NULL, '{"ok": true}',
       jsonb_build_object('n', g), f - interval '1 second', f
FROM (SELECT to_timestamp(floor(extract(epoch FROM now()) / 3600) * 3600) - interval '167 hours' AS t0) AS b,
     generate_series(1, :rows) AS g,
     LATERAL (SELECT b.t0 + (now() - b.t0) * (g::float8 / (:rows + 1)) AS f) AS t;
VACUUM ANALYZE history_big_history;
CREATE TEMP TABLE history_times (what text, ms float8);
DO $$
DECLARE
    t0 timestamptz;
    n bigint;
BEGIN
    t0 := clock_timestamp();
    PERFORM ck.maintain_history('history_big');
    INSERT INTO history_times VALUES ('seal', extract(epoch FROM clock_timestamp() - t0) * 1000);
    FOR i IN 1..20 LOOP
        t0 := clock_timestamp();
        SELECT sum(jobs) INTO n FROM ck.history_counts('history_big');
        INSERT INTO history_times VALUES ('counts', extract(epoch FROM clock_timestamp() - t0) * 1000);
    END LOOP;
    t0 := clock_timestamp();
    SELECT sum(c) INTO n FROM (SELECT count(*) AS c FROM history_big_history GROUP BY state) AS s;
    INSERT INTO history_times VALUES ('plain', extract(epoch FROM clock_timestamp() - t0) * 1000);
END
$$;
SELECT (SELECT count(*) FROM history_big_history) AS rows,
       (SELECT count(*) FROM ck.history_partitions WHERE queue = 'history_big'::regclass) AS partitions,
       (SELECT round(ms::numeric) FROM history_times WHERE what = 'seal') AS seal_ms,
       (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2) FROM history_times WHERE what = 'counts') AS counts_median_ms,
       (SELECT round(max(ms)::numeric, 2) FROM history_times WHERE what = 'counts') AS counts_max_ms,
       (SELECT round(ms::numeric, 1) FROM history_times WHERE what = 'plain') AS plain_count_ms;
