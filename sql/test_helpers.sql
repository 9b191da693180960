-- Helpers for the other regress tests (they run after this one, in the same database).
CREATE SCHEMA test;

-- Runs one statement and says how it ended: 'ok', or its SQLSTATE, message, (DETAIL)
-- and [HINT]. For 42883 (no such function) only the message: PostgreSQL's own DETAIL and
-- HINT there differ between majors (19 reworded them).
CREATE FUNCTION test.outcome(statement text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    detail text;
    hint text;
BEGIN
    EXECUTE statement;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    IF SQLSTATE = '42883' THEN
        RETURN SQLSTATE || ': ' || SQLERRM;
    END IF;
    RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' (' || nullif(detail, '') || ')', '')
        || coalesce(' [' || nullif(hint, '') || ']', '');
END $$;
