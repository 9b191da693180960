-- The rule of thumb, pessimistic: lock the row, read it, write it, in one transaction (never stale, may wait).
\set id random(1, :rows)
BEGIN;
SELECT n AS old FROM docs WHERE id = :id FOR NO KEY UPDATE \gset
UPDATE docs SET n = :old + 1, version = version + 1 WHERE id = :id;
COMMIT;
