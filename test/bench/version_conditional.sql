-- The rule of thumb, conditional: the change as one UPDATE ... WHERE <condition> (ck.try_decrement).
\set id random(1, :rows)
SELECT ck.try_decrement('docs', :id::int, 'qty', 1);
