-- ck.unique_guard_ddl with a predicate that calls the user's own functions, on PostgreSQL
-- 17+ (run only there), where CREATE INDEX runs the functions of its predicate with
-- search_path = pg_catalog, pg_temp. The call itself resolves with the caller's path; what
-- fails is a function body that leaves a name of the user's schema unqualified.
CREATE TABLE signups (id int PRIMARY KEY, email text, nick text, code text, tag text);
INSERT INTO signups VALUES (1, 'a@example.com', 'a', 'A', 'x'), (2, 'b@example.com', 'b', 'B', 'y');
CREATE FUNCTION public.norm(text) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT lower($1)';
-- bodies that call norm unqualified: plain SQL and PL/pgSQL (looked up when they run), the
-- same with SET search_path, and BEGIN ATOMIC (bound when created)
CREATE FUNCTION public.real_sql(text) RETURNS boolean LANGUAGE sql IMMUTABLE
    AS 'SELECT norm($1) <> ''''';
CREATE FUNCTION public.real_plpgsql(text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE
    AS 'BEGIN RETURN norm($1) <> ''''; END';
CREATE FUNCTION public.real_pinned(text) RETURNS boolean LANGUAGE sql IMMUTABLE SET search_path = public
    AS 'SELECT norm($1) <> ''''';
CREATE FUNCTION public.real_atomic(t text) RETURNS boolean LANGUAGE sql IMMUTABLE
    BEGIN ATOMIC SELECT norm(t) <> ''; END;
SHOW search_path;

-- (42883; terse: the rest of the error is PostgreSQL's and differs between majors)
\set VERBOSITY terse
-- plain SQL: CREATE INDEX fails while it inlines the function, and leaves nothing behind
SELECT ck.unique_guard_ddl('signups', '{email}', 'real_sql(email)') \gexec
-- PL/pgSQL: fails while it builds the index, and CONCURRENTLY leaves the index INVALID;
-- the guard's DDL is then refused (IF NOT EXISTS would skip the invalid index): drop it first
SELECT ck.unique_guard_ddl('signups', '{nick}', 'real_plpgsql(nick)') \gexec
\set VERBOSITY default
SELECT ck.unique_guard_ddl('signups', '{nick}', 'real_plpgsql(nick)') \gexec
SELECT indexrelid::regclass AS index, indisvalid FROM pg_index WHERE indrelid = 'signups'::regclass ORDER BY indexrelid::regclass::text;
-- the fix: SET search_path on the function (or qualify the names in its body)
ALTER FUNCTION public.real_sql(text) SET search_path = public;
ALTER FUNCTION public.real_plpgsql(text) SET search_path = public;
DROP INDEX CONCURRENTLY signups_nick_unique;
SELECT ck.unique_guard_ddl('signups', '{email}', 'real_sql(email)') \gexec
SELECT ck.unique_guard_ddl('signups', '{nick}', 'real_plpgsql(nick)') \gexec
SELECT ck.unique_guard_ddl('signups', '{code}', 'real_pinned(code)') \gexec
SELECT ck.unique_guard_ddl('signups', '{tag}', 'real_atomic(tag)') \gexec
SELECT indexrelid::regclass AS index, indisvalid FROM pg_index WHERE indrelid = 'signups'::regclass ORDER BY indexrelid::regclass::text;
-- and the guards guard, under the caller's path as under none
\set VERBOSITY sqlstate
INSERT INTO signups VALUES (3, 'A@example.com', 'c', 'C', 'z');
INSERT INTO signups VALUES (4, 'd@example.com', 'd', 'D', 'x');
SET search_path = '';
INSERT INTO public.signups VALUES (5, 'e@example.com', 'b', 'E', 'w');
RESET search_path;
\set VERBOSITY default
SELECT count(*) AS signups FROM signups;

DROP TABLE signups;
DROP FUNCTION public.real_sql(text), public.real_plpgsql(text), public.real_pinned(text), public.real_atomic(text),
    public.norm(text);
