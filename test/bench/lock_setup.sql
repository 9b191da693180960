-- Set-up for the advisory-lock benchmark: registers namespace 'bench' (the first one in the
-- benchmark database, so number 1, which the by-number scripts use).
SELECT ck.lock_namespace('bench');
