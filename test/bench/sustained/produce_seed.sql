-- make bench-sustained, a seed producer: one task per transaction.
INSERT INTO tasks (payload) VALUES ('{"n": 0}');
