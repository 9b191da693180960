-- ck.sqlstate_action: every class of the contract, our own codes, and bad input.
SELECT code, ck.sqlstate_action(code)
FROM unnest(ARRAY['40001', '40P01', '55P03', '23505', '23P01', 'CK001', 'CK002', 'CK003',
                  'CK004', 'CK005', 'CK006', '23503', '42P01', 'XX000', 'P0001']) AS code;
SELECT ck.sqlstate_action(NULL) IS NULL AS null_in_null_out;
SELECT ck.sqlstate_action('4000');
SELECT ck.sqlstate_action('40p01');
SELECT ck.sqlstate_action('');
