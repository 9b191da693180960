-- The C++/PostgreSQL boundary: errors raised deep inside keep their SQLSTATE, message,
-- detail and hint; an error caught by the caller leaves the session healthy.
CREATE TABLE guarded (id int PRIMARY KEY, qty int NOT NULL CHECK (qty <= 100));
INSERT INTO guarded VALUES (1, 50), (2, 50);

-- a CHECK constraint violated by the UPDATE our function runs
SELECT test.outcome($$SELECT ck.try_increment('guarded', 1, 'qty', 60, 1000)$$);

-- an error raised by a trigger inside our statement, with every field
CREATE FUNCTION guarded_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id = 2 THEN
        RAISE EXCEPTION USING ERRCODE = '22012', MESSAGE = 'refused deep inside',
            DETAIL = 'raised by a trigger', HINT = 'leave row 2 alone';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER guarded_refuse BEFORE UPDATE ON guarded
    FOR EACH ROW EXECUTE FUNCTION guarded_refuse();
SELECT test.outcome($$SELECT ck.try_decrement('guarded', 2, 'qty', 1)$$);

-- a query cancel (statement_timeout) inside our statement arrives as 57014
CREATE FUNCTION guarded_slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(5);
    RETURN NEW;
END $$;
CREATE TRIGGER guarded_slow BEFORE UPDATE ON guarded
    FOR EACH ROW WHEN (NEW.id = 1 AND NEW.qty = 13) EXECUTE FUNCTION guarded_slow();
UPDATE guarded SET qty = 14 WHERE id = 1;
SET statement_timeout = '200ms';
\set VERBOSITY sqlstate
SELECT ck.try_decrement('guarded', 1, 'qty', 1);
\set VERBOSITY default
RESET statement_timeout;

-- the caller catches our errors and goes on: the session stays usable
DO $$
DECLARE
    caught int := 0;
BEGIN
    FOR i IN 1..3 LOOP
        BEGIN
            PERFORM ck.decrement('guarded', 1, 'qty', 1000);
        EXCEPTION WHEN SQLSTATE 'CK001' THEN
            caught := caught + 1;
        END;
        BEGIN
            PERFORM ck.try_decrement('guarded', 2, 'qty', 1);
        EXCEPTION WHEN division_by_zero THEN
            caught := caught + 1;
        END;
    END LOOP;
    RAISE NOTICE 'caught % errors', caught;
END $$;
SELECT ck.try_decrement('guarded', 1, 'qty', 4);
SELECT * FROM guarded ORDER BY id;
