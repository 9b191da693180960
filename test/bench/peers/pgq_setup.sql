-- make bench-peers, PgQ: :queues queues bench_pgq_1 .. bench_pgq_N, each with consumer 'bench' and :events events
-- of '{"n": ...}' (PgQ's events are text) in batches of 500: every 500 events are committed in their own
-- transaction and followed by a tick (PgQ's default ticker_max_count is 500), so each batch a consumer gets holds
-- exactly 500 events. The consumer is registered at the first tick; pgq_rewind.sql moves it back there before
-- each run (PgQ never deletes events a consumer read: its tables rotate), so every run reads the same events.
CREATE EXTENSION IF NOT EXISTS pgq;

CREATE OR REPLACE PROCEDURE bench_pgq_fill(queues int, events int)
LANGUAGE plpgsql AS $$
DECLARE
    q text;
BEGIN
    PERFORM pgq.drop_queue(queue_name, true) FROM pgq.queue WHERE queue_name LIKE 'bench_pgq_%';
    COMMIT;
    FOR i IN 1..queues LOOP
        q := 'bench_pgq_' || i;
        PERFORM pgq.create_queue(q);
        PERFORM pgq.register_consumer(q, 'bench');
        COMMIT;
    END LOOP;
    FOR chunk IN 0..(events / 500) - 1 LOOP
        FOR i IN 1..queues LOOP
            PERFORM pgq.insert_event('bench_pgq_' || i, 'job', format('{"n": %s}', chunk * 500 + g))
            FROM generate_series(1, 500) AS g;
        END LOOP;
        COMMIT;
        FOR i IN 1..queues LOOP
            -- 500 new events: pgq.ticker ticks (ticker_max_count), but for the first chunk, which it counts as
            -- 499 (the first tick saw the fresh event sequence at 1): then force_tick makes it tick
            IF pgq.ticker('bench_pgq_' || i) IS NULL THEN
                PERFORM pgq.force_tick('bench_pgq_' || i);
                IF pgq.ticker('bench_pgq_' || i) IS NULL THEN
                    RAISE 'no tick for queue bench_pgq_%', i;
                END IF;
            END IF;
        END LOOP;
        COMMIT;
    END LOOP;
END
$$;

CREATE OR REPLACE PROCEDURE bench_pgq_rewind()
LANGUAGE plpgsql AS $$
DECLARE
    q record;
BEGIN
    FOR q IN SELECT queue_id, queue_name FROM pgq.queue WHERE queue_name LIKE 'bench_pgq_%' LOOP
        PERFORM pgq.unregister_consumer(q.queue_name, 'bench');
        PERFORM pgq.register_consumer_at(q.queue_name, 'bench',
                                         (SELECT min(tick_id) FROM pgq.tick WHERE tick_queue = q.queue_id));
    END LOOP;
END
$$;

-- Events consumed since the rewind, over all bench queues (500 a batch: the ticks a consumer moved past), and how
-- many queues ran dry (their consumer reached the last tick: the run may have waited for events there).
CREATE OR REPLACE VIEW bench_pgq_progress AS
SELECT 500 * sum(s.sub_last_tick - t.first) AS events, count(*) FILTER (WHERE s.sub_last_tick = t.last) AS dry
FROM pgq.queue q
JOIN pgq.subscription s ON s.sub_queue = q.queue_id
CROSS JOIN LATERAL (SELECT min(tick_id) AS first, max(tick_id) AS last FROM pgq.tick WHERE tick_queue = q.queue_id) t
WHERE q.queue_name LIKE 'bench_pgq_%';
