-- make bench-horizon, a seed producer: one task per transaction, its payload the enqueue time (the worker's wait).
INSERT INTO tasks (payload) VALUES (jsonb_build_object('t', clock_timestamp()));
