-- The tables of the race programs (test/client/race_programs.sh): the guide's examples, each on
-- one hot row so that 8 clients meet on it. reset.sql refills them before each program.
CREATE EXTENSION IF NOT EXISTS concurrency_kit;
CREATE TABLE stock (id int PRIMARY KEY, qty bigint NOT NULL);
CREATE TABLE shows (id int PRIMARY KEY, seats_left bigint NOT NULL);
CREATE TABLE tickets (id bigserial PRIMARY KEY, show_id int NOT NULL);
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
CREATE TABLE docs (id int PRIMARY KEY, body text NOT NULL, version bigint NOT NULL DEFAULT 0);
-- The transfer as it is often written: read both balances, decide, write both. Correct only at
-- SERIALIZABLE, where the programs run it through CALL ck.retry.
CREATE FUNCTION transfer(from_id int, to_id int, amount bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    a bigint;
    b bigint;
BEGIN
    SELECT balance INTO a FROM accounts WHERE id = from_id;
    SELECT balance INTO b FROM accounts WHERE id = to_id;
    IF a >= amount THEN
        UPDATE accounts SET balance = a - amount WHERE id = from_id;
        UPDATE accounts SET balance = b + amount WHERE id = to_id;
    END IF;
END $$;
