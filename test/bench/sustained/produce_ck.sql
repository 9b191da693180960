-- make bench-sustained, a ck producer: one job per transaction.
SELECT ck.enqueue('sustained', '{"n": 0}');
