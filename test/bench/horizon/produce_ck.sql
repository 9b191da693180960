-- make bench-horizon, a ck producer: one job per transaction, its payload the enqueue time (the worker's wait).
SELECT ck.enqueue('sustained', jsonb_build_object('t', clock_timestamp()));
