-- ck.race_audit: read-decide-write races in function and procedure bodies (RULES.md: read,
-- decide, write the same row; write skew). A labelled corpus in the shapes application code
-- has (stock, seats, balances and transfers, bookings, usernames, doctors on call): races,
-- and near-misses that are correct. The audit's rows are compared with the labels, and the
-- precision and recall per kind are printed (the README cites them).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS btree_gist SCHEMA public;
RESET client_min_messages;
CREATE SCHEMA race_corpus;
SET search_path = race_corpus, public;

CREATE TABLE stock (sku int PRIMARY KEY, qty int NOT NULL);
CREATE TABLE accounts (id int PRIMARY KEY, balance numeric NOT NULL);
CREATE TABLE ledger (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, account int NOT NULL, seen numeric);
CREATE TABLE tickets (code text PRIMARY KEY, state text NOT NULL DEFAULT 'free', customer text);
CREATE TABLE docs (id int PRIMARY KEY, body text NOT NULL, version bigint NOT NULL DEFAULT 1);
CREATE TABLE counters (name text PRIMARY KEY, n bigint NOT NULL);
CREATE TABLE jobs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, status text NOT NULL);
CREATE TABLE shows (id int PRIMARY KEY, capacity int NOT NULL);
CREATE TABLE seats (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, show_id int NOT NULL REFERENCES shows,
                    customer text NOT NULL);
CREATE TABLE users (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL);
CREATE TABLE handles (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, handle text NOT NULL UNIQUE);
CREATE TABLE members (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, org int NOT NULL, name text NOT NULL,
                      UNIQUE (org, name));
CREATE TABLE bookings (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, room int NOT NULL, during int4range NOT NULL);
CREATE TABLE reservations (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, room int NOT NULL, during int4range NOT NULL,
                           EXCLUDE USING gist (room WITH =, during WITH &&));
CREATE TABLE doctors (id int PRIMARY KEY, shift int NOT NULL, on_call boolean NOT NULL);
CREATE TABLE notifications (id int PRIMARY KEY, person int NOT NULL, seen boolean NOT NULL DEFAULT false);
CREATE TABLE labels (func regprocedure PRIMARY KEY, expected text NOT NULL
                     CHECK (expected IN ('lost_update', 'write_skew', 'ok')));

------------------------------------------------------------------------------------------
-- Lost updates: read, decide in code, write the same row.
------------------------------------------------------------------------------------------
-- The stock read, checked, written back.
CREATE FUNCTION lu_sell(p_sku int, n int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE q int;
BEGIN
    SELECT qty INTO q FROM stock WHERE sku = p_sku;
    IF q < n THEN
        RAISE EXCEPTION 'only % left', q;
    END IF;
    UPDATE stock SET qty = q - n WHERE sku = p_sku;
    RETURN q - n;
END $$;
-- A deposit computed in code.
CREATE FUNCTION lu_deposit(p int, amount numeric) RETURNS void LANGUAGE plpgsql AS $$
DECLARE b numeric;
BEGIN
    SELECT balance INTO b FROM accounts WHERE id = p;
    UPDATE accounts SET balance = b + amount WHERE id = p;
END $$;
-- A transfer: both balances read, both written (two rows).
CREATE FUNCTION lu_transfer(src int, dst int, amount numeric) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    from_balance numeric;
    to_balance numeric;
BEGIN
    SELECT balance INTO from_balance FROM accounts WHERE id = src;
    SELECT balance INTO to_balance FROM accounts WHERE id = dst;
    IF from_balance < amount THEN
        RAISE EXCEPTION 'insufficient funds';
    END IF;
    UPDATE accounts SET balance = from_balance - amount WHERE id = src;
    UPDATE accounts SET balance = to_balance + amount WHERE id = dst;
END $$;
-- A ticket's state read, then the ticket booked: two buyers both see 'free'.
CREATE FUNCTION lu_book_ticket(p_code text, who text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
    SELECT state INTO s FROM tickets WHERE code = p_code;
    IF s <> 'free' THEN
        RAISE EXCEPTION 'ticket % is %', p_code, s;
    END IF;
    UPDATE tickets SET state = 'booked', customer = who WHERE code = p_code;
END $$;
-- A loop over the rows read.
CREATE FUNCTION lu_restock_loop(skus int[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT sku, qty FROM stock WHERE sku = ANY (skus) LOOP
        UPDATE stock SET qty = r.qty + 10 WHERE sku = r.sku;
    END LOOP;
END $$;
-- The whole row into a record.
CREATE FUNCTION lu_record(p_sku int, n int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE rec stock;
BEGIN
    SELECT * INTO rec FROM stock WHERE sku = p_sku;
    UPDATE stock SET qty = rec.qty - n WHERE sku = p_sku;
END $$;
-- SQL: the read is a sub-select of the UPDATE itself (not re-read after the row lock's wait).
CREATE FUNCTION lu_sql_subselect(p_sku int, n int) RETURNS void LANGUAGE sql AS $$
    UPDATE stock SET qty = (SELECT qty FROM stock WHERE sku = p_sku) - n WHERE sku = p_sku
$$;
-- SQL: a task queue's claim without SKIP LOCKED or a re-check: two workers take one job.
CREATE FUNCTION lu_sql_claim() RETURNS bigint LANGUAGE sql AS $$
    UPDATE jobs SET status = 'running'
     WHERE id = (SELECT id FROM jobs WHERE status = 'ready' ORDER BY id LIMIT 1)
    RETURNING id
$$;
-- An assignment, then a counter written back.
CREATE FUNCTION lu_counter(p text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE cur bigint;
BEGIN
    cur := (SELECT n FROM counters WHERE name = p);
    UPDATE counters SET n = cur + 1 WHERE name = p;
    RETURN cur + 1;
END $$;
-- A document edited in code.
CREATE FUNCTION lu_append(p int, extra text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE b text;
BEGIN
    SELECT body INTO b FROM docs WHERE id = p;
    UPDATE docs SET body = b || extra WHERE id = p;
END $$;
-- SQL: a CTE reads the row the UPDATE writes.
CREATE FUNCTION lu_sql_cte(p_sku int, n int) RETURNS void LANGUAGE sql AS $$
    WITH cur AS (SELECT qty FROM stock WHERE sku = p_sku)
    UPDATE stock SET qty = cur.qty - n FROM cur WHERE stock.sku = p_sku
$$;
-- A procedure: the row lock ends with the COMMIT, and the write comes after it.
CREATE PROCEDURE lu_commit_between(p_sku int) LANGUAGE plpgsql AS $$
DECLARE q int;
BEGIN
    SELECT qty INTO q FROM stock WHERE sku = p_sku FOR NO KEY UPDATE;
    COMMIT;
    UPDATE stock SET qty = q - 1 WHERE sku = p_sku;
END $$;
-- The value goes through another variable.
CREATE FUNCTION lu_copied(p_sku int, n int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    q int;
    remaining int;
BEGIN
    SELECT qty INTO q FROM stock WHERE sku = p_sku;
    remaining := q - n;
    UPDATE stock SET qty = remaining WHERE sku = p_sku;
END $$;
-- The read is in another function (not followed: a miss).
CREATE FUNCTION current_qty(p_sku int) RETURNS int LANGUAGE sql STABLE AS $$
    SELECT qty FROM stock WHERE sku = p_sku
$$;
CREATE FUNCTION lu_through_helper(p_sku int, n int) RETURNS void LANGUAGE sql AS $$
    UPDATE stock SET qty = race_corpus.current_qty(p_sku) - n WHERE sku = p_sku
$$;

------------------------------------------------------------------------------------------
-- Write skew: a check over rows, then a write the check was meant to guard.
------------------------------------------------------------------------------------------
-- A username checked, then inserted: no unique constraint on users.name.
CREATE FUNCTION ws_register(p text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM users WHERE name = p) THEN
        RAISE EXCEPTION 'name % is taken', p;
    END IF;
    INSERT INTO users (name) VALUES (p);
END $$;
-- The same with a count.
CREATE FUNCTION ws_register_count(p text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    SELECT count(*) INTO n FROM users WHERE name = p;
    IF n > 0 THEN
        RAISE EXCEPTION 'name % is taken', p;
    END IF;
    INSERT INTO users (name) VALUES (p);
END $$;
-- The same with an id read.
CREATE FUNCTION ws_register_id(p text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE existing int;
BEGIN
    SELECT id INTO existing FROM users WHERE name = p;
    IF existing IS NULL THEN
        INSERT INTO users (name) VALUES (p) RETURNING id INTO existing;
    END IF;
    RETURN existing;
END $$;
-- SQL: the check inside the INSERT (one statement still reads one snapshot).
CREATE FUNCTION ws_sql_register(p text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO users (name) SELECT p WHERE NOT EXISTS (SELECT 1 FROM users WHERE name = p)
$$;
-- A booking: no overlap checked with PERFORM and FOUND, no exclusion constraint.
CREATE FUNCTION ws_book_room(r int, d int4range) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM bookings WHERE room = r AND during && d;
    IF FOUND THEN
        RAISE EXCEPTION 'room % is taken', r;
    END IF;
    INSERT INTO bookings (room, during) VALUES (r, d);
END $$;
-- The same with FOR UPDATE: it locks the rows that exist, not the one about to be inserted.
CREATE FUNCTION ws_book_room_locked(r int, d int4range) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM bookings WHERE room = r AND during && d FOR UPDATE;
    IF FOUND THEN
        RAISE EXCEPTION 'room % is taken', r;
    END IF;
    INSERT INTO bookings (room, during) VALUES (r, d);
END $$;
-- Seats of a show counted, then one sold.
CREATE FUNCTION ws_sell_seat(s int, who text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE sold bigint;
BEGIN
    SELECT count(*) INTO sold FROM seats WHERE show_id = s;
    IF sold >= (SELECT capacity FROM shows WHERE id = s) THEN
        RAISE EXCEPTION 'show % is sold out', s;
    END IF;
    INSERT INTO seats (show_id, customer) VALUES (s, who);
END $$;
-- SQL: the capacity in the INSERT.
CREATE FUNCTION ws_sql_sell_seat(s int, who text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO seats (show_id, customer)
    SELECT s, who WHERE (SELECT count(*) FROM seats WHERE show_id = s) < 100
$$;
-- A doctor goes off call while another one stays: both check, both go.
CREATE FUNCTION ws_off_call(p_doctor int, p_shift int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    SELECT count(*) INTO n FROM doctors WHERE shift = p_shift AND on_call;
    IF n < 2 THEN
        RAISE EXCEPTION 'someone must stay on call';
    END IF;
    UPDATE doctors SET on_call = false WHERE id = p_doctor;
END $$;
-- The same with EXISTS in the condition.
CREATE FUNCTION ws_off_call_exists(p_doctor int, p_shift int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM doctors WHERE shift = p_shift AND on_call AND id <> p_doctor) THEN
        UPDATE doctors SET on_call = false WHERE id = p_doctor;
    END IF;
END $$;
-- A name checked over every org, but the unique constraint is per org.
CREATE FUNCTION ws_member_anywhere(o int, p text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM members WHERE name = p) THEN
        RAISE EXCEPTION 'name % is taken', p;
    END IF;
    INSERT INTO members (org, name) VALUES (o, p);
END $$;
-- The insert is in another function (not followed: a miss).
CREATE FUNCTION add_seat(s int, who text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO race_corpus.seats (show_id, customer) VALUES (s, who) ON CONFLICT DO NOTHING
$$;
CREATE FUNCTION ws_through_helper(s int, who text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE sold bigint;
BEGIN
    SELECT count(*) INTO sold FROM seats WHERE show_id = s;
    IF sold < 100 THEN
        PERFORM race_corpus.add_seat(s, who);
    END IF;
END $$;

------------------------------------------------------------------------------------------
-- Correct near-misses.
------------------------------------------------------------------------------------------
-- One UPDATE with its condition (SQL and PL/pgSQL).
CREATE FUNCTION ok_sql_decrement(p_sku int, n int) RETURNS int LANGUAGE sql AS $$
    UPDATE stock SET qty = qty - n WHERE sku = p_sku AND qty >= n RETURNING qty
$$;
CREATE FUNCTION ok_decrement(p_sku int, n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE stock SET qty = qty - n WHERE sku = p_sku AND qty >= n;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'not enough of %', p_sku;
    END IF;
END $$;
-- The read locks the row.
CREATE FUNCTION ok_sell_for_update(p_sku int, n int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE q int;
BEGIN
    SELECT qty INTO q FROM stock WHERE sku = p_sku FOR UPDATE;
    IF q < n THEN
        RAISE EXCEPTION 'only % left', q;
    END IF;
    UPDATE stock SET qty = q - n WHERE sku = p_sku;
END $$;
CREATE FUNCTION ok_transfer_locked(src int, dst int, amount numeric) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    from_balance numeric;
    to_balance numeric;
BEGIN
    SELECT balance INTO from_balance FROM accounts WHERE id = src FOR NO KEY UPDATE;
    SELECT balance INTO to_balance FROM accounts WHERE id = dst FOR NO KEY UPDATE;
    IF from_balance < amount THEN
        RAISE EXCEPTION 'insufficient funds';
    END IF;
    UPDATE accounts SET balance = from_balance - amount WHERE id = src;
    UPDATE accounts SET balance = to_balance + amount WHERE id = dst;
END $$;
CREATE FUNCTION ok_restock_locked(skus int[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT sku, qty FROM stock WHERE sku = ANY (skus) ORDER BY sku FOR NO KEY UPDATE LOOP
        UPDATE stock SET qty = r.qty + 10 WHERE sku = r.sku;
    END LOOP;
END $$;
-- A read for the message, and a guarded UPDATE.
CREATE FUNCTION ok_guarded(p_sku int, n int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE q int;
BEGIN
    SELECT qty INTO q FROM stock WHERE sku = p_sku;
    IF q < n THEN
        RAISE EXCEPTION 'only % left', q;
    END IF;
    UPDATE stock SET qty = qty - n WHERE sku = p_sku AND qty >= n;
END $$;
-- Compare and set: written only while the value is the one read.
CREATE FUNCTION ok_compare_and_set(p_sku int, n int) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE q int;
BEGIN
    SELECT qty INTO q FROM stock WHERE sku = p_sku;
    UPDATE stock SET qty = q - n WHERE sku = p_sku AND qty = q;
    RETURN FOUND;
END $$;
-- Optimistic: the version read is checked by the write.
CREATE FUNCTION ok_version(p int, extra text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    b text;
    v bigint;
BEGIN
    SELECT body, version INTO b, v FROM docs WHERE id = p;
    UPDATE docs SET body = b || extra, version = v + 1 WHERE id = p AND version = v;
    RETURN FOUND;
END $$;
-- The ticket booked only while it is free.
CREATE FUNCTION ok_book_ticket(p_code text, who text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
    SELECT state INTO s FROM tickets WHERE code = p_code;
    IF s <> 'free' THEN
        RETURN false;
    END IF;
    UPDATE tickets SET state = 'booked', customer = who WHERE code = p_code AND state = 'free';
    RETURN FOUND;
END $$;
-- The write is ck's conditional call.
CREATE FUNCTION ok_ck_decrement(p_sku int, n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE q int;
BEGIN
    SELECT qty INTO q FROM stock WHERE sku = p_sku;
    IF q < n THEN
        RETURN NULL;
    END IF;
    RETURN ck.try_decrement('race_corpus.stock', p_sku, 'qty', n);
END $$;
CREATE FUNCTION ok_ck_version(p int, extra text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    b text;
    v bigint;
BEGIN
    SELECT body, version INTO b, v FROM docs WHERE id = p;
    RETURN ck.update_if_version('race_corpus.docs', p, v, jsonb_build_object('body', b || extra));
END $$;
-- The claim with SKIP LOCKED, and one with a re-check.
CREATE FUNCTION ok_sql_claim_skip_locked() RETURNS bigint LANGUAGE sql AS $$
    UPDATE jobs SET status = 'running'
     WHERE id = (SELECT id FROM jobs WHERE status = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id
$$;
CREATE FUNCTION ok_sql_claim_recheck() RETURNS bigint LANGUAGE sql AS $$
    UPDATE jobs SET status = 'running'
     WHERE id = (SELECT id FROM jobs WHERE status = 'ready' ORDER BY id LIMIT 1) AND status = 'ready'
    RETURNING id
$$;
-- Check, then insert with ON CONFLICT.
CREATE FUNCTION ok_on_conflict(p text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM handles WHERE handle = p) THEN
        RETURN false;
    END IF;
    INSERT INTO handles (handle) VALUES (p) ON CONFLICT (handle) DO NOTHING;
    RETURN FOUND;
END $$;
-- Check, then insert, under a unique constraint on what was checked: the loser gets 23505.
CREATE FUNCTION ok_unique(p text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM handles WHERE handle = p) THEN
        RAISE EXCEPTION 'handle % is taken', p;
    END IF;
    INSERT INTO handles (handle) VALUES (p);
END $$;
CREATE FUNCTION ok_member(o int, p text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    SELECT count(*) INTO n FROM members WHERE org = o AND name = p;
    IF n > 0 THEN
        RAISE EXCEPTION 'name % is taken in %', p, o;
    END IF;
    INSERT INTO members (org, name) VALUES (o, p);
END $$;
-- Check, then insert, under an exclusion constraint: the loser gets 23P01.
CREATE FUNCTION ok_reserve(r int, d int4range) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM reservations WHERE room = r AND during && d;
    IF FOUND THEN
        RAISE EXCEPTION 'room % is taken', r;
    END IF;
    INSERT INTO reservations (room, during) VALUES (r, d);
END $$;
-- The show's row locked before its seats are counted: sellers of one show take turns.
CREATE FUNCTION ok_sell_seat_locked(s int, who text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    cap int;
    sold bigint;
BEGIN
    SELECT capacity INTO cap FROM shows WHERE id = s FOR NO KEY UPDATE;
    SELECT count(*) INTO sold FROM seats WHERE show_id = s;
    IF sold >= cap THEN
        RAISE EXCEPTION 'show % is sold out', s;
    END IF;
    INSERT INTO seats (show_id, customer) VALUES (s, who);
END $$;
-- An advisory lock on the name, then the check.
CREATE FUNCTION ok_register_advisory(p text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ck.xact_lock('usernames', length(p));
    IF EXISTS (SELECT 1 FROM users WHERE name = p) THEN
        RAISE EXCEPTION 'name % is taken', p;
    END IF;
    INSERT INTO users (name) VALUES (p);
END $$;
-- The table locked first.
CREATE FUNCTION ok_register_lock_table(p text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT 1 FROM users WHERE name = p) THEN
        RAISE EXCEPTION 'name % is taken', p;
    END IF;
    INSERT INTO users (name) VALUES (p);
END $$;
-- The doctors of the shift locked (in key order), then counted.
CREATE FUNCTION ok_off_call_lock_rows(p_doctor int, p_shift int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    PERFORM ck.lock_rows('race_corpus.doctors', ARRAY(SELECT id FROM doctors WHERE shift = p_shift));
    SELECT count(*) INTO n FROM doctors WHERE shift = p_shift AND on_call;
    IF n < 2 THEN
        RAISE EXCEPTION 'someone must stay on call';
    END IF;
    UPDATE doctors SET on_call = false WHERE id = p_doctor;
END $$;
-- The doctors counted through a locking sub-select.
CREATE FUNCTION ok_off_call_locked(p_doctor int, p_shift int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    SELECT count(*) INTO n FROM (SELECT id FROM doctors WHERE shift = p_shift AND on_call FOR NO KEY UPDATE) d;
    IF n < 2 THEN
        RAISE EXCEPTION 'someone must stay on call';
    END IF;
    UPDATE doctors SET on_call = false WHERE id = p_doctor;
END $$;
-- SERIALIZABLE: set by the procedure for its transaction, or by the function's SET clause.
CREATE PROCEDURE ok_off_call_serializable(p_doctor int, p_shift int) LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    COMMIT;
    SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;
    SELECT count(*) INTO n FROM doctors WHERE shift = p_shift AND on_call;
    IF n < 2 THEN
        RAISE EXCEPTION 'someone must stay on call';
    END IF;
    UPDATE doctors SET on_call = false WHERE id = p_doctor;
END $$;
CREATE FUNCTION ok_register_serializable(p text) RETURNS void LANGUAGE plpgsql
SET default_transaction_isolation = serializable AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM users WHERE name = p) THEN
        RAISE EXCEPTION 'name % is taken', p;
    END IF;
    INSERT INTO users (name) VALUES (p);
END $$;
-- The check and the insert run by CALL ck.retry at SERIALIZABLE.
CREATE PROCEDURE ok_sell_seat_retry(s int, who text) LANGUAGE plpgsql AS $body$
DECLARE tries int;
BEGIN
    CALL ck.retry(format($$INSERT INTO race_corpus.seats (show_id, customer)
                           SELECT %s, %L WHERE (SELECT count(*) FROM race_corpus.seats WHERE show_id = %s) < 100$$,
                         s, who, s), 'serializable', 10, false, tries);
END $body$;
-- Reads that decide nothing written back.
CREATE FUNCTION ok_sql_report(s int) RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM seats WHERE show_id = s
$$;
CREATE FUNCTION ok_log_balance(p int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE b numeric;
BEGIN
    SELECT balance INTO b FROM accounts WHERE id = p;
    INSERT INTO ledger (account, seen) VALUES (p, b);
END $$;
CREATE FUNCTION ok_deposit_then_read(p int, amount numeric) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE b numeric;
BEGIN
    UPDATE accounts SET balance = balance + amount WHERE id = p;
    SELECT balance INTO b FROM accounts WHERE id = p;
    RETURN b;
END $$;
-- SQL: a read then an atomic write (a SQL function's statements pass no values to each other).
CREATE FUNCTION ok_sql_two_statements(p_sku int) RETURNS int LANGUAGE sql AS $$
    SELECT qty FROM stock WHERE sku = p_sku;
    UPDATE stock SET qty = qty - 1 WHERE sku = p_sku AND qty > 0 RETURNING qty;
$$;
-- Notifications marked seen after a count: nothing to protect (a false positive of the audit).
CREATE FUNCTION ok_mark_seen(p int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    SELECT count(*) INTO n FROM notifications WHERE person = p AND NOT seen;
    IF n > 0 THEN
        UPDATE notifications SET seen = true WHERE person = p;
    END IF;
    RETURN n;
END $$;

-- A body that does not parse: a row saying so, outside the corpus.
CREATE SCHEMA race_other;
SET check_function_bodies = off;
CREATE FUNCTION race_other.broken() RETURNS int LANGUAGE plpgsql AS $$ BEGIN SELEC 1; END $$;
RESET check_function_bodies;

-- The labels: the name's prefix, and the helpers are not in the corpus.
INSERT INTO labels
SELECT p.oid::regprocedure,
       CASE split_part(p.proname, '_', 1) WHEN 'lu' THEN 'lost_update' WHEN 'ws' THEN 'write_skew' ELSE 'ok' END
  FROM pg_proc p
 WHERE p.pronamespace = 'race_corpus'::regnamespace AND split_part(p.proname, '_', 1) IN ('lu', 'ws', 'ok');
SELECT expected, count(*) FROM labels GROUP BY expected ORDER BY expected;

RESET search_path;

-- What the audit says of the corpus.
CREATE TEMP TABLE found AS SELECT * FROM ck.race_audit('race_corpus');
SELECT func, kind, read_statement, write_statement FROM found ORDER BY func::text COLLATE "C", write_statement COLLATE "C";
-- The rule and the fix, once for each kind of fix.
SELECT DISTINCT kind, rule FROM found ORDER BY kind;
SELECT kind, fix FROM found GROUP BY kind, fix ORDER BY kind, fix COLLATE "C";

-- Each function of the corpus: its label and what the audit found (misses and false alarms marked).
SELECT l.func, l.expected, coalesce(string_agg(DISTINCT f.kind, ','), 'ok') AS found,
       CASE WHEN l.expected = coalesce(string_agg(DISTINCT f.kind, ','), 'ok') THEN '' ELSE 'WRONG' END AS mark
  FROM race_corpus.labels l LEFT JOIN found f ON f.func = l.func
 GROUP BY l.func, l.expected ORDER BY l.expected, l.func::text COLLATE "C";

-- Precision and recall per kind, over functions: a function is found for a kind when the audit
-- gives it a row of that kind.
SELECT k.kind,
       count(*) FILTER (WHERE l.expected = k.kind) AS labelled,
       count(*) FILTER (WHERE f.found AND l.expected = k.kind) AS true_pos,
       count(*) FILTER (WHERE f.found AND l.expected <> k.kind) AS false_pos,
       count(*) FILTER (WHERE NOT f.found AND l.expected = k.kind) AS missed,
       round(count(*) FILTER (WHERE f.found AND l.expected = k.kind)::numeric
             / nullif(count(*) FILTER (WHERE f.found), 0), 2) AS precision,
       round(count(*) FILTER (WHERE f.found AND l.expected = k.kind)::numeric
             / nullif(count(*) FILTER (WHERE l.expected = k.kind), 0), 2) AS recall
  FROM (VALUES ('lost_update'), ('write_skew')) AS k (kind)
 CROSS JOIN race_corpus.labels l
 CROSS JOIN LATERAL (SELECT EXISTS (SELECT FROM found x WHERE x.func = l.func AND x.kind = k.kind) AS found) f
 GROUP BY k.kind ORDER BY k.kind;

-- A body that cannot be analysed; without a schema every schema is audited, ck is not.
SELECT func, kind, read_statement, write_statement, rule, fix FROM ck.race_audit('race_other');
SELECT count(*) FILTER (WHERE func::text LIKE 'race_corpus.%') = (SELECT count(*) FROM found) AS corpus_found,
       count(*) FILTER (WHERE func::text LIKE 'race_other.%') AS other_rows,
       count(*) FILTER (WHERE func::text LIKE 'ck.%') AS ck_rows
  FROM ck.race_audit();

-- Nothing of the analysis stays: no lock on the audited tables, search_path as it was.
BEGIN;
SELECT count(*) > 0 AS found FROM ck.race_audit('race_corpus');
SELECT count(*) AS relation_locks_held
  FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
 WHERE l.pid = pg_backend_pid() AND c.relnamespace = 'race_corpus'::regnamespace;
SHOW search_path;
COMMIT;

-- Its labels: STABLE, PARALLEL UNSAFE (a subtransaction per function), SECURITY INVOKER.
SELECT provolatile, proparallel, prosecdef, proconfig FROM pg_proc WHERE oid = 'ck.race_audit(name)'::regprocedure;

-- Bad input.
SELECT test.outcome($$SELECT * FROM ck.race_audit('no_such_schema')$$);

SET client_min_messages = warning;
DROP SCHEMA race_corpus, race_other CASCADE;
RESET client_min_messages;
