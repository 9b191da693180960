#!/usr/bin/env python3
"""Random calls of every ck function for test/chaos/fuzz.sh.

Usage: fuzz_calls.py gen COUNT SEED > calls.sql      (print the cases)
       fuzz_calls.py run COUNT SEED WORKDIR [psql options...]
                                                      (run them with psql, report)

Each case is one line (a line may hold a few statements: a transaction, a savepoint, a
cursor) calling a ck function with arguments drawn from a list of values per type: real
objects of test/chaos/fuzz_schema.sql most of the time, boundary and hostile values (NULLs,
bounds of every integer type, NaN and infinities, extreme intervals, empty, NULL-holding and
multi-dimensional arrays, relations of every kind) otherwise; in contexts that exercise the
error paths (PL/pgSQL exception blocks, savepoints, cursors, prepared statements, parallel
mode, other isolation levels, DDL in the same transaction, another role, cancels after a
millisecond). Same COUNT and SEED, same cases.

`run` executes the cases with psql (VERBOSITY sqlstate), maps every error to its case by
line number, and when the connection is lost (a crashed backend) records the case, waits
for the server and goes on with the next case. It prints report lines starting with "#"
and one line "RESULT key=value ...", and writes WORKDIR/internal.txt (cases that raised
XX000) and WORKDIR/crashes.txt (cases after which the connection was lost).
"""
import random
import sys

import os
import re
import subprocess
import time
from collections import Counter, defaultdict

rng = random.Random(0)


def pick(*pools):
    """One value: mostly from the first pool (plausible), else from the rest (hostile)."""
    if len(pools) == 1 or rng.random() < 0.7:
        return rng.choice(pools[0])
    return rng.choice(rng.choice(pools[1:]))


def q(s):
    return "'" + s.replace("'", "''") + "'"


# --- values per type -------------------------------------------------------------------

TABLES = ["'stock'", "'bookings'", "'slots'", "'orders'", "'part'"]
QUEUES = ["'jobs'", "'mail'"]
BAD_RELS = [
    "NULL", "NULL::regclass", "0", "'0'::regclass", "'4294967295'::regclass", "1259",
    "'jobs_dead'", "'mail_dead'", "'ck.queues'", "'ck.lock_namespaces'", "'ck.lease_tokens'",
    "'pg_class'", "'pg_catalog.pg_proc'", "'stock_pkey'", "'stock_v'", "'stock_mv'", "'comp'",
    "'ft'", "'part_1'", "'fuzz_values'", "'pg_toast.pg_toast_1255'", "'information_schema.tables'",
    "(SELECT 'stock'::regclass::oid + 1)::regclass",
]
NAMES = ["'q4'", "'q2'", "'q8'", "'qn'", "'qd'", "'state'", "'status'", "'label'", "'code'",
         "'sku'", "'id'", "'during'", "'busy'", "'n'", "'room'", "'priority'", "'attempts'", "'payload'"]
BAD_NAMES = ["NULL", "NULL::name", "''", "'nope'", "'Q4'", "'\"q4\"'", "'q4; DROP TABLE stock'",
             "repeat('x', 63)", "repeat('x', 200)", "'ctid'", "'xmin'", "'tableoid'", "'oid'",
             "'........pg.dropped.11........'", "'gone'", "'é'", "'note'", "'run_at'", "'lease_token'"]
KEYS = ["1", "2", "3", "42", "1001", "1002", "1003", "1004", "2::smallint", "7::bigint",
        "'sku-1'::text", "'sku-1'", "'42'", "'max'", "'free'::mood"]
BAD_KEYS = ["NULL::int", "NULL::text", "NULL", "-1", "0", "2147483647", "-2147483648",
            "2147483648", "9223372036854775807", "-9223372036854775808", "1.5", "1e100",
            "'NaN'::numeric", "'x'::text", "''::text", "true", "now()", "'{1}'::int[]",
            "ROW(1, 2)", "'{}'::jsonb", "'1'::varchar", "'2030-01-01'::date", "1::oid",
            "'1'::name", "'(1,2)'::point", "repeat('k', 3000)", "'12'::\"char\""]
AMOUNTS = ["1", "2", "5", "100"]
BAD_AMOUNTS = ["NULL", "0", "-1", "32767", "32768", "2147483647", "2147483648",
               "9223372036854775807", "-9223372036854775808", "NULL::bigint"]
BOUNDS = ["100", "1000", "32767", "2147483647", "9223372036854775807", "NULL"]
BAD_BOUNDS = ["1e100", "0", "-1", "'NaN'", "'Infinity'", "'-Infinity'", "1e-100", "-1e100",
              "9223372036854775807", "99999999999999999999999999999999999999", "0.5"]
UNIQUE_KEYS = ["'k1'", "'k2'", "'mail:' || 7"]
CONCURRENCY_KEYS = ["'tenant:1'", "'tenant:2'", "''"]
AFTERS = ["ARRAY[1]", "ARRAY[1, 2, 3]", "'{}'::bigint[]", "NULL", "ARRAY[9223372036854775807]"]
BAD_AFTERS = ["ARRAY[NULL]::bigint[]", "ARRAY[0]", "ARRAY[-1]"]
STATES = ["'free'", "'held'", "'booked'", "'cancelled'"]
BAD_TEXTS = ["NULL", "''", "'nope'", "'FREE'", "repeat('x', 10000)", "'x'';--'", "'é'",
             "E'tab\\there'", "' free'", "NULL::text"]
INTERVALS = ["'30 seconds'", "'1 second'", "'1 hour'", "'10 ms'", "'1 day'"]
BAD_INTERVALS = ["NULL", "'0'", "'1 microsecond'", "'-1 second'", "'1000 years'",
                 "'178000000 years'", "'-178000000 years'", "'2147483647 days'",
                 "'-2147483648 days'", "'1 mon -30 days'", "'-1 mon 31 days'", "'1 day -1 hour'",
                 "'2562047788 hours'", "'-2562047788 hours'", "'300000 years'", "NULL::interval"]
WAITS = ["'0'", "'1 ms'", "'10 ms'", "'50 ms'"]          # claim_wait's max_wait: keep it short
BAD_WAITS = ["NULL", "'-1 second'", "'1 microsecond'", "'1 mon -30 days'", "'300000 years'"]
INTS = ["1", "2", "5", "10"]
BAD_INTS = ["NULL", "0", "-1", "10000", "10001", "1000", "1001", "2147483647", "-2147483648"]
BIGINTS = ["(SELECT max(id) FROM jobs)", "(SELECT min(id) FROM jobs)", "1", "2"]
BAD_BIGINTS = ["NULL", "0", "-1", "9223372036854775807", "-9223372036854775808", "NULL::bigint"]
TOKENS = ["(SELECT max(lease_token) FROM jobs)", "(SELECT min(lease_token) FROM jobs)",
          "(SELECT last_value FROM ck.lease_tokens)"]
ARRAYS = ["'{}'", "'{1,2,3}'", "ARRAY(SELECT id FROM jobs ORDER BY id LIMIT 5)"]
BAD_ARRAYS = ["NULL", "'{NULL}'", "'{1,NULL}'", "'{{1,2},{3,4}}'", "'[5:7]={1,2,3}'",
              "array_fill(1::bigint, ARRAY[10000])", "array_fill(1::bigint, ARRAY[10001])",
              "'{9223372036854775807}'", "'{{}}'", "array_fill(1::bigint, ARRAY[1, 1, 1])"]
JSONS = ["'{}'", "'{\"n\": 1}'", "'[1, 2]'"]
RESULTS = ["ARRAY['{}'::jsonb]", "'{}'::jsonb[]", "ARRAY[NULL, '{\"ok\": true}']::jsonb[]"]   # complete_many's results
BAD_RESULTS = ["NULL::jsonb[]", "ARRAY['{}', '{}', '{}', '{}', '{}', '{}']::jsonb[]"]
RATE_KEYS = ["'api:1'", "'api:2'"]
# keys of jobs: mail's (tenant:0..2, limited to 2 each, fuzz_schema.sql), and jobs' (unlimited, SCENARIOS)
PAUSE_KEYS = ["NULL", "'tenant:0'", "'tenant:1'", "'tenant:2'"]
BAD_JSONS = ["NULL", "'null'", "'\"x\"'", "(SELECT jsonb_agg(g) FROM generate_series(1, 5000) g)",
             "'{\"a\": {\"b\": [null, {\"c\": \"\\u00e9\"}]}}'"]
TIMES = ["now()", "now() + interval '1 hour'", "now() - interval '1 day'"]
BAD_TIMES = ["NULL", "'infinity'", "'-infinity'", "'294276-12-31 23:59:59+00'",
             "'4713-11-24 00:00:00+00 BC'", "NULL::timestamptz"]
BOOLS = ["true", "false"]
BAD_BOOLS = ["NULL"]
NS_INTS = ["1", "2", "(SELECT id FROM ck.lock_namespaces WHERE name = 'outbox')"]
BAD_NS_INTS = ["NULL", "0", "-1", "2147483647", "-2147483648", "99", "NULL::int"]
NS_NAMES = ["'outbox'", "'migrator'", "'fuzz-a'", "'fuzz-b'"]
BAD_NS_NAMES = ["NULL::text", "''", "repeat('x', 63)", "repeat('x', 64)", "repeat('é', 31) || 'x'",
                "repeat('é', 32)", "' '", "E'new\\nline'", "'Outbox'", "'ns''quote'"]
LOCK_KEYS = ["0", "1", "7", "42"]
BAD_LOCK_KEYS = ["NULL", "-1", "2147483647", "-2147483648", "2147483648", "-9223372036854775808", "1.5"]
NAME_ARRAYS = ["'{}'", "'{room}'", "'{id}'"]
BAD_NAME_ARRAYS = ["NULL", "'{NULL}'", "'{room,room}'", "'{nope}'", "'{{room}}'", "'{during}'",
                   "'[2:2]={room}'", "'{\"\"}'", "'{room,id,during}'", "'{busy}'", "'{n}'",
                   "ARRAY[repeat('r', 100)]::name[]", "'{ctid}'", "'{q4,q8,qn,qd,code,state}'"]
UNIQUE_COLS = ["'{code}'", "'{q4}'", "'{sku}'", "'{state,status}'", "'{id}'"]
WHERES = ["NULL", "'q4 > 0'", "'true'", "'code IS NOT NULL'", "'sku IN (1, 2, 3)'", "'state = ''free'''"]
BAD_WHERES = ["''", "'random() > 0.5'", "'(SELECT true)'", "'q4 > 0; DROP TABLE stock'",
              "'q4 > 0) WHERE (true'", "'nope > 1'", "'q4'", "'count(*) > 1'", "'1'",
              "'now() > ''2020-01-01'''", "'pg_catalog.pg_sleep(1) IS NULL'", "'$1 > 0'",
              "repeat('q4 > 0 AND ', 2000) || 'true'", "'q4 > 0 -- '", "'/*'", "'ctid > ''(0,1)'''"]
SQLS = ["'SELECT 1'", "'UPDATE stock SET q8 = q8 WHERE sku = 1'", "'SELECT ck.current_attempt()'",
        "'SELECT * FROM stock WHERE q4 > 0'", "'SELECT count(*) FROM jobs'"]
BAD_SQLS = ["NULL", "''", "' ; '", "'COMMIT'", "'ROLLBACK'", "'SAVEPOINT a'", "'BEGIN'",
            "'SELECT 1; SELECT 2'", "'SELECT 1/0'", "'VACUUM stock'", "'SELECT'",
            "'CALL ck.retry(''SELECT 1'')'", "'SET LOCAL lock_timeout = 1'",
            "'DO $x$BEGIN RAISE EXCEPTION USING ERRCODE = ''40001''; END$x$'",
            "'DO $x$BEGIN RAISE EXCEPTION USING ERRCODE = ''55P03''; END$x$'",
            "'SELECT pg_catalog.pg_advisory_xact_lock(1)'", "'PREPARE p1 AS SELECT 1'",
            "'LISTEN fuzz'", "'-- only a comment'", "'/* unterminated'", "'SELECT $1'",
            "'EXPLAIN SELECT 1'", "'COPY stock TO STDOUT'", "'CREATE TEMP TABLE zz (a int)'",
            "'MERGE INTO stock s USING (SELECT 1 AS sku) v ON s.sku = v.sku WHEN MATCHED THEN UPDATE SET q8 = s.q8'",
            "'WITH x AS (DELETE FROM orders WHERE id < 0 RETURNING *) SELECT * FROM x'",
            "'SELECT * FROM stock FOR UPDATE'", "'SELECT * FROM stock, stock s2'",
            "'INSERT INTO orders (id) VALUES (1)'", "'SET TRANSACTION ISOLATION LEVEL READ COMMITTED'",
            "'PREPARE TRANSACTION ''x'''", "'SELECT pg_catalog.pg_sleep(0.01)'",
            "'EXECUTE nope'", "'SELECT 1 \\\\gexec'", "repeat('SELECT 1;', 500)",
            "'UPDATE stock SET q4 = q4 WHERE sku = 1 RETURNING *'",
            "'SELECT * FROM ck.claim(''jobs'')'", "'LOCK TABLE stock IN SHARE MODE'"]
ISOLATIONS = ["'serializable'", "'read committed'", "'repeatable read'", "'SERIALIZABLE'"]
BAD_ISOLATIONS = ["NULL", "''", "'read uncommitted'", "'snapshot'", "' serializable'",
                  "'serializable; drop'", "repeat('s', 5000)"]
SQLSTATES = ["'40001'", "'40P01'", "'55P03'", "'23505'", "'23P01'", "'CK001'", "'CK005'", "'CK006'", "'22004'"]
BAD_SQLSTATES = ["NULL", "''", "'abcde'", "'4000'", "'400011'", "'XX000'", "'00000'", "'é1234'",
                 "'40 01'", "'ck001'", "repeat('4', 1000)"]
QUEUE_NAMES = ["'q_new'", "'public.q_new2'", "'pg_temp.q_tmp'"]
BAD_QUEUE_NAMES = ["NULL", "''", "'jobs'", "'stock'", "'nosuchschema.q'", "'ck.q'", "'pg_catalog.q'",
                   "repeat('q', 63)", "repeat('q', 70)", "'\"Quoted Name\"'", "'a.b.c'",
                   "'q; DROP TABLE stock'", "'\"\"'", "'public.'", "'.q'", "'\"q\"\"x\"'",
                   "repeat('é', 40)"]
SCHEMAS = ["NULL", "'public'", "'ck'"]
BAD_SCHEMAS = ["'pg_catalog'", "'nope'", "''", "'information_schema'", "'pg_toast'", "repeat('s', 100)"]
CONSTRAINT_NAMES = ["NULL", "'g1'"]
BAD_CONSTRAINT_NAMES = ["''", "'bookings_during_no_overlap'", "repeat('c', 100)", "'stock_pkey'",
                        "'\"quoted\"'"]
VERSIONS = ["10", "11", "0", "(SELECT q8 FROM stock WHERE sku = 1)"]
CHANGES = ["'{}'", "'{\"q4\": 5}'", "'{\"status\": \"held\", \"label\": \"x\"}'", "'{\"state\": \"booked\"}'",
           "jsonb_build_object('qn', 1.5, 'code', NULL)"]
BAD_CHANGES = ["NULL", "'null'", "'[1]'", "'\"q4\"'", "'{\"sku\": 1}'", "'{\"q8\": 1}'", "'{\"nope\": 1}'",
               "'{\"ctid\": 1}'", "'{\"q4\": \"x\"}'", "'{\"label\": \"far too long\"}'", "'{\"q2\": 99999}'",
               "'{\"q4; DROP TABLE stock\": 1}'", "'{\"state\": {\"a\": 1}}'", "jsonb_build_object(repeat('x', 200), 1)"]
KEY_ARRAYS = ["ARRAY[1, 2, 3]", "ARRAY[3, 1]", "'{}'::int[]", "ARRAY[1]::bigint[]", "ARRAY[2]::smallint[]",
              "ARRAY(SELECT sku FROM stock ORDER BY random() LIMIT 5)", "'{1,2}'", "'{}'"]
BAD_KEY_ARRAYS = ["NULL", "NULL::int[]", "ARRAY[NULL::int]", "'{{1,2},{3,4}}'::int[]", "'[5:7]={1,2,3}'::int[]",
                  "ARRAY['x']", "ARRAY[1.5]", "ARRAY[now()]", "ARRAY[2147483647]", "'{}'::text[]", "'{x}'", "'{1,NULL}'", "1", "'1'"]
LOCK_MODES = ["'no key update'", "'update'", "'share'", "'key share'", "'NO KEY UPDATE'"]
BAD_LOCK_MODES = ["NULL", "''", "'exclusive'", "'for update'", "'nokeyupdate'", "repeat('x', 10000)", "'update;'"]
MAX_PAIRS = ["1", "10", "1000"]
BAD_MAX_PAIRS = ["NULL", "0", "-1", "2147483647"]


def rel():
    return pick(TABLES, BAD_RELS, QUEUES)


def queue():
    return pick(QUEUES, BAD_RELS, TABLES)


def opt(args, *optional):
    """args plus a random number of the optional trailing arguments (each a thunk)."""
    out = list(args)
    for make in optional:
        if rng.random() < 0.5:
            break
        out.append(make())
    return out


def ns():
    return pick(NS_INTS, BAD_NS_INTS) if rng.random() < 0.5 else pick(NS_NAMES, BAD_NS_NAMES)


def iv():
    return pick(INTERVALS, BAD_INTERVALS)


def key_for(table):
    if table == "'part'":
        return str(rng.randint(1, 20))
    if table == "'orders'":
        return rng.choice([str(rng.randint(1, 100)), "%d::bigint" % rng.randint(1, 100)])
    return rng.choice([str(rng.randint(1, 100)), "%d::smallint" % rng.randint(1, 100),
                       "%d::bigint" % rng.randint(1, 100), rng.choice(["1001", "1002", "1003", "1004"])])


def counter_args(increment):
    """Half the time a coherent call (a counter of a table that has it, a key of a row);
    else every argument drawn on its own."""
    if rng.random() < 0.5:
        table = rng.choice(["'stock'", "'stock'", "'stock'", "'part'"])
        col = "'q4'" if table == "'part'" else rng.choice(["'q2'", "'q4'", "'q8'", "'qn'", "'qd'"])
        args = [table, key_for(table), col, pick(AMOUNTS, BAD_AMOUNTS)]
        if increment:
            args.append(pick(BOUNDS, BAD_BOUNDS))
        if table == "'stock'" and rng.random() < 0.2:
            args[1] = rng.choice(["'sku-%d'::text", "'sku-%d'"]) % rng.randint(1, 100)
            args.append("'code'")
        return args
    args = [rel(), pick(KEYS, BAD_KEYS), pick(NAMES, BAD_NAMES), pick(AMOUNTS, BAD_AMOUNTS)]
    if increment:
        args.append(pick(BOUNDS, BAD_BOUNDS))
    return opt(args, lambda: pick(NAMES, BAD_NAMES))


def state_args():
    if rng.random() < 0.5:
        table, col = rng.choice([("'stock'", "'state'"), ("'stock'", "'status'"), ("'stock'", "'label'"),
                                 ("'orders'", "'state'"), ("'part'", "'state'")])
        return [table, key_for(table), col, pick(STATES, BAD_TEXTS), pick(STATES, BAD_TEXTS)]
    return opt([rel(), pick(KEYS, BAD_KEYS), pick(NAMES, BAD_NAMES), pick(STATES, BAD_TEXTS),
                pick(STATES, BAD_TEXTS)], lambda: pick(NAMES, BAD_NAMES))


def version_args():
    if rng.random() < 0.5:
        return opt(["'stock'", key_for("'stock'"), pick(VERSIONS, BAD_BIGINTS), pick(CHANGES, BAD_CHANGES), "'q8'"],
                   lambda: pick(["NULL", "'sku'", "'code'"], BAD_NAMES))
    return opt([rel(), pick(KEYS, BAD_KEYS), pick(VERSIONS, BAD_BIGINTS), pick(CHANGES, BAD_CHANGES)],
               lambda: pick(["'q8'", "'q2'", "'q4'"], BAD_NAMES, NAMES), lambda: pick(NAMES, BAD_NAMES))


def lock_args():
    return opt([rel(), pick(KEY_ARRAYS, BAD_KEY_ARRAYS)], lambda: pick(LOCK_MODES, BAD_LOCK_MODES),
               lambda: pick(WAITS, BAD_INTERVALS), lambda: pick(["'code'", "'sku'", "NULL"], BAD_NAMES, NAMES))


# name -> (builder of the argument list, returns a set, needs a rolled-back transaction)
FUNCS = {
    "try_decrement": (lambda: counter_args(False), False, False),
    "decrement": (lambda: counter_args(False), False, False),
    "try_increment": (lambda: counter_args(True), False, False),
    "increment": (lambda: counter_args(True), False, False),
    "try_transition": (lambda: state_args(), False, False),
    "transition": (lambda: state_args(), False, False),
    "try_update_if_version": (lambda: version_args(), False, False),
    "update_if_version": (lambda: version_args(), False, False),
    "version_guard": (lambda: [], False, False),
    "version_guard_ddl": (lambda: opt([rel()], lambda: pick(["'q8'", "'q4'", "'q2'"], BAD_NAMES, NAMES)), False, False),
    "add_version_guard": (lambda: opt([rel()], lambda: pick(["'q8'", "'q4'", "'q2'"], BAD_NAMES, NAMES)), False, True),
    "lock_rows": (lambda: lock_args(), False, False),
    "sqlstate_action": (lambda: [pick(SQLSTATES, BAD_SQLSTATES)], False, False),
    "queues_changed": (lambda: [], False, False),
    "notify_queue": (lambda: [], False, False),
    "queue_left": (lambda: [], False, False),
    "queue_ready": (lambda: [], False, False),
    "claim_wait_mode": (lambda: [], False, False),
    "create_queue": (lambda: opt([pick(QUEUE_NAMES, BAD_QUEUE_NAMES)], iv, lambda: pick(INTS, BAD_INTS),
                                 lambda: pick(BOOLS, BAD_BOOLS)), False, True),
    "drop_queue": (lambda: [queue()], False, True),
    "adopt_queue": (lambda: opt([pick(["'orphan'"], BAD_QUEUE_NAMES)], iv, lambda: pick(INTS, BAD_INTS),
                                lambda: pick(BOOLS, BAD_BOOLS)), False, True),
    "enqueue": (lambda: opt([queue()], lambda: pick(JSONS, BAD_JSONS), lambda: pick(TIMES, BAD_TIMES),
                            lambda: pick(INTS, BAD_INTS), lambda: pick(UNIQUE_KEYS, BAD_TEXTS), iv,
                            lambda: pick(CONCURRENCY_KEYS, BAD_TEXTS), lambda: pick(AFTERS, BAD_AFTERS)), False, False),
    "enqueue_unique": (lambda: opt([queue(), pick(UNIQUE_KEYS, BAD_TEXTS), pick(JSONS, BAD_JSONS)],
                                   lambda: pick(TIMES, BAD_TIMES), lambda: pick(INTS, BAD_INTS), iv), True, False),
    "cancel": (lambda: [queue(), pick(BIGINTS, BAD_BIGINTS)], False, False),
    "set_concurrency_limit": (lambda: [queue(), pick(CONCURRENCY_KEYS + ["NULL"], BAD_TEXTS),
                                       pick(["0", "1", "2", "NULL"], BAD_INTS)], False, True),
    # Citus only: without it distribute_queue raises 0A000, attach_queue_shard needs a shard's columns.
    "distribute_queue": (lambda: opt([queue()], lambda: pick(INTS, BAD_INTS)), False, True),
    "ck_internal.attach_queue_shard": (lambda: [queue(), rel(), pick(INTS, BAD_INTS), pick(INTS, BAD_INTS), pick(INTS, BAD_INTS),
                                    pick(BIGINTS, BAD_BIGINTS), iv(), pick(INTS, BAD_INTS)], False, True),
    "ck_internal.detach_queue_shard": (lambda: [rel()], False, True),
    # Names that resolve to no table: a row for a real one would make its calls route to shards.
    "ck_internal.register_distributed_queue": (lambda: [pick(["'no_such_table'", "'public.\"Nope\"'"], BAD_TEXTS),
                                            pick(["'{1,2}'::int[]", "'{}'::int[]"], BAD_ARRAYS),
                                            pick(["'{a,b}'::text[]", "'{}'::text[]"], ["NULL", "'{NULL}'::text[]"])],
                                   False, True),
    "claim": (lambda: opt([queue()], lambda: pick(INTS, BAD_INTS), iv), True, False),
    "claim_wait": (lambda: [queue(), pick(INTS, BAD_INTS), iv(), pick(WAITS, BAD_WAITS)], True, False),
    # the acknowledgements with a result (1.1.0) are the same names with one more argument
    "complete": (lambda: opt([queue(), pick(BIGINTS, BAD_BIGINTS), pick(TOKENS, BAD_BIGINTS)],
                             lambda: pick(JSONS, BAD_JSONS)), False, False),
    "complete_and_claim": (lambda: opt([queue(), pick(BIGINTS, BAD_BIGINTS), pick(TOKENS, BAD_BIGINTS)],
                                       lambda: pick(INTS, BAD_INTS), iv, lambda: pick(JSONS, BAD_JSONS)), True, False),
    "complete_many": (lambda: opt([queue(), pick(ARRAYS, BAD_ARRAYS), pick(ARRAYS, BAD_ARRAYS)],
                                  lambda: pick(RESULTS, BAD_RESULTS)), True, False),
    "fail": (lambda: opt([queue(), pick(BIGINTS, BAD_BIGINTS), pick(TOKENS, BAD_BIGINTS)],
                         lambda: pick(["'boom'"], BAD_TEXTS), iv), False, False),
    "extend_lease": (lambda: [queue(), pick(BIGINTS, BAD_BIGINTS), pick(TOKENS, BAD_BIGINTS), iv()], False, False),
    "try_complete": (lambda: opt([queue(), pick(BIGINTS, BAD_BIGINTS), pick(TOKENS, BAD_BIGINTS)],
                                 lambda: pick(JSONS, BAD_JSONS)), False, False),
    "try_complete_many": (lambda: opt([queue(), pick(ARRAYS, BAD_ARRAYS), pick(ARRAYS, BAD_ARRAYS)],
                                      lambda: pick(RESULTS, BAD_RESULTS)), True, False),
    "try_fail": (lambda: opt([queue(), pick(BIGINTS, BAD_BIGINTS), pick(TOKENS, BAD_BIGINTS)],
                             lambda: pick(["'boom'"], BAD_TEXTS), iv), False, False),
    "try_extend_lease": (lambda: [queue(), pick(BIGINTS, BAD_BIGINTS), pick(TOKENS, BAD_BIGINTS), iv()], False, False),
    "retry_dead": (lambda: [queue(), pick(["(SELECT min(id) FROM jobs_dead)", "(SELECT max(id) FROM mail_dead)"],
                                          BAD_BIGINTS)], False, False),
    "purge_dead": (lambda: [queue(), iv()], False, False),
    "retry_dead_matching": (lambda: opt([queue()], lambda: pick(["'boom'", "NULL"], BAD_TEXTS),
                                        lambda: pick(["'bo%'", "NULL"], BAD_TEXTS), iv, lambda: pick(INTS, BAD_INTS),
                                        lambda: pick(JSONS, BAD_JSONS), lambda: pick(INTS, BAD_INTS)), False, False),
    "purge_dead_matching": (lambda: opt([queue()], lambda: pick(["'boom'", "NULL"], BAD_TEXTS),
                                        lambda: pick(["'bo%'", "NULL"], BAD_TEXTS), iv, lambda: pick(INTS, BAD_INTS),
                                        lambda: pick(JSONS, BAD_JSONS), lambda: pick(INTS, BAD_INTS)), False, False),
    # 1.1.0 (issue 47): pause, rate limits, history and waiting for a job (settings rolled back)
    "pause_queue": (lambda: opt([queue()], lambda: pick(PAUSE_KEYS, BAD_TEXTS)), False, True),
    "resume_queue": (lambda: opt([queue()], lambda: pick(PAUSE_KEYS, BAD_TEXTS)), False, True),
    "try_rate": (lambda: [pick(RATE_KEYS, BAD_TEXTS), pick(INTS, BAD_INTS), iv()], False, False),
    "rate": (lambda: [pick(RATE_KEYS, BAD_TEXTS), pick(INTS, BAD_INTS), iv()], False, False),
    "set_rate_limit": (lambda: opt([queue(), pick(CONCURRENCY_KEYS + ["NULL"], BAD_TEXTS),
                                    pick(["1", "100", "NULL"], BAD_INTS)], iv), False, True),
    "set_history": (lambda: opt([queue(), pick(["'1 day'", "'1 hour'", "NULL"], BAD_INTERVALS)], iv), False, True),
    "maintain_history": (lambda: [queue()], False, True),
    "history_counts": (lambda: opt([queue()], lambda: pick(TIMES + ["NULL"], BAD_TIMES)), True, False),
    "job": (lambda: [queue(), pick(BIGINTS, BAD_BIGINTS)], False, False),
    "await_job": (lambda: opt([queue(), pick(BIGINTS, BAD_BIGINTS)], lambda: pick(WAITS, ["NULL", "'-1 second'"])),
                  False, False),
    "queue_stats": (lambda: [queue()], False, False),
    "ck_internal.claim_frontier": (lambda: [queue()], True, False),
    "queue_activity": (lambda: [], True, False),
    "claim_path": (lambda: [queue()], False, False),
    "lock_namespace": (lambda: [pick(NS_NAMES, BAD_NS_NAMES)], False, False),
    "xact_lock": (lambda: opt([ns()], lambda: pick(LOCK_KEYS, BAD_LOCK_KEYS), iv), False, False),
    "try_xact_lock": (lambda: opt([ns()], lambda: pick(LOCK_KEYS, BAD_LOCK_KEYS)), False, False),
    "session_lock": (lambda: opt([ns()], lambda: pick(LOCK_KEYS, BAD_LOCK_KEYS), iv), False, False),
    "session_unlock": (lambda: opt([ns()], lambda: pick(LOCK_KEYS, BAD_LOCK_KEYS)), False, False),
    "session_unlock_all": (lambda: [], False, False),
    "ck_internal.session_locks_held": (lambda: [], True, False),
    "held_locks": (lambda: [], True, False),
    "lock_waits": (lambda: [], True, False),
    "set_lock_timeout": (lambda: [iv()], False, False),
    "retry": (lambda: opt([pick(SQLS, BAD_SQLS)], lambda: pick(ISOLATIONS, BAD_ISOLATIONS),
                          lambda: pick(["1", "2", "3"], BAD_INTS), lambda: pick(BOOLS, BAD_BOOLS),
                          lambda: "NULL"), False, False),
    "current_attempt": (lambda: [], False, False),
    "retry_stats": (lambda: [], False, False),
    "overlap_guard_ddl": (lambda: opt([rel(), pick(["'during'", "'busy'", "'n'"], BAD_NAMES, NAMES)],
                                      lambda: pick(NAME_ARRAYS, BAD_NAME_ARRAYS),
                                      lambda: pick(CONSTRAINT_NAMES, BAD_CONSTRAINT_NAMES)), False, False),
    "find_overlaps": (lambda: opt([rel(), pick(["'during'", "'busy'", "'n'"], BAD_NAMES, NAMES)],
                                  lambda: pick(NAME_ARRAYS, BAD_NAME_ARRAYS),
                                  lambda: pick(MAX_PAIRS, BAD_MAX_PAIRS)), True, False),
    "add_overlap_guard": (lambda: opt([rel(), pick(["'during'", "'busy'", "'n'"], BAD_NAMES, NAMES)],
                                      lambda: pick(NAME_ARRAYS, BAD_NAME_ARRAYS),
                                      lambda: pick(CONSTRAINT_NAMES, BAD_CONSTRAINT_NAMES)), False, True),
    "unique_guard_ddl": (lambda: opt([rel(), pick(UNIQUE_COLS, BAD_NAME_ARRAYS)], lambda: pick(WHERES, BAD_WHERES)),
                         False, False),
    "volatility_audit": (lambda: opt([], lambda: pick(SCHEMAS, BAD_SCHEMAS)), True, False),
    "lock_audit": (lambda: opt([], lambda: pick(SCHEMAS, BAD_SCHEMAS)), True, False),
    "race_audit": (lambda: opt([], lambda: pick(SCHEMAS, BAD_SCHEMAS)), True, False),
    "race_reports": (lambda: [], True, False),
    "race_reports_reset": (lambda: [], False, False),
    "scan_check": (lambda: [pick(SQLS, BAD_SQLS)], True, False),
}

# Whole scenarios with real ids and tokens: claim, then acknowledge in the same statement.
SCENARIOS = [
    "SELECT ck.complete('jobs', c.id, c.lease_token) FROM ck.claim('jobs', {n}) AS c",
    "SELECT ck.fail('jobs', c.id, c.lease_token, 'fuzz', {iv}) FROM ck.claim('jobs', {n}) AS c",
    "SELECT ck.extend_lease('jobs', c.id, c.lease_token, {iv}) FROM ck.claim('jobs', {n}) AS c",
    "SELECT * FROM ck.complete_many('jobs', (SELECT array_agg(id) FROM c), (SELECT array_agg(lease_token) FROM c))",
    "SELECT n.* FROM ck.claim('jobs') AS c, LATERAL ck.complete_and_claim('jobs', c.id, c.lease_token, {n}) AS n",
    # with a result, kept in the history of 'jobs' (fuzz_schema.sql)
    "SELECT ck.complete('jobs', c.id, c.lease_token, jsonb_build_object('n', c.id)) FROM ck.claim('jobs', {n}) AS c",
    "SELECT ck.try_complete('jobs', c.id, c.lease_token, '{{\"ok\": true}}') FROM ck.claim('jobs', {n}) AS c",
    "SELECT * FROM ck.complete_many('jobs', (SELECT array_agg(id) FROM c), (SELECT array_agg(lease_token) FROM c), (SELECT array_agg(jsonb_build_object('n', id)) FROM c))",
    "SELECT * FROM ck.try_complete_many('jobs', (SELECT array_agg(id) FROM c), (SELECT array_agg(lease_token) FROM c), (SELECT array_agg(NULL::jsonb) FROM c))",
    "SELECT n.* FROM ck.claim('jobs') AS c, LATERAL ck.complete_and_claim('jobs', c.id, c.lease_token, {n}, {iv}, '[1]') AS n",
    "SELECT ck.job('jobs', c.id), ck.complete('jobs', c.id, c.lease_token, NULL) FROM ck.claim('jobs', {n}) AS c",
    "SELECT * FROM ck.history_counts('jobs')",
    "SELECT ck.fail('mail', c.id, c.lease_token, NULL) FROM ck.claim('mail', {n}) AS c",
    "SELECT ck.retry_dead('mail', d.id) FROM (SELECT id FROM mail_dead ORDER BY random() LIMIT {n}) AS d",
    "SELECT ck.cancel('jobs', c.id) FROM ck.claim('jobs', {n}) AS c",
    "SELECT ck.cancel('jobs', j.id) FROM (SELECT id FROM jobs ORDER BY random() LIMIT {n}) AS j",
    "SELECT (ck.enqueue_unique('jobs', 'fuzz:' || (g % 3), '{{}}')).inserted FROM generate_series(1, {n}) AS g",
    "SELECT ck.retry_dead('jobs', d.id) FROM (SELECT id FROM jobs_dead ORDER BY random() LIMIT {n}) AS d",
    "SELECT ck.enqueue('jobs', after => ARRAY(SELECT id FROM jobs ORDER BY random() LIMIT {n})) FROM generate_series(1, {n})",
    "SELECT ck.try_decrement('stock', s.sku, {col}, {amount}) FROM stock AS s WHERE s.sku < {n} + 3",
    "SELECT ck.try_increment('stock', s.sku, {col}, {amount}, {bound}) FROM stock AS s WHERE s.sku > 1000",
    "SELECT ck.try_transition('orders', o.id, 'state', o.state::text, {state}) FROM orders AS o WHERE o.id < {n} + 3",
    "SELECT ck.try_update_if_version('stock', s.sku, s.q8, jsonb_build_object('q4', s.q4 + 1), 'q8') FROM stock AS s WHERE s.sku < {n} + 3",
    "SELECT ck.lock_rows('stock', array_agg(s.sku ORDER BY random()), 'update', {iv}) FROM stock AS s WHERE s.sku < {n} + 5",
    "SELECT ck.update_if_version('stock', s.sku, s.q8, jsonb_build_object('q2', 1), 'q8') FROM stock AS s WHERE s.sku < {n} + 3",
    "SELECT ck.version_guard_ddl('stock', 'q8')",
    # the guard fires (ck.version_guard) on a plain UPDATE, all rolled back
    "BEGIN; SELECT ck.add_version_guard('stock', 'q8'); UPDATE stock SET q4 = q4 WHERE sku = {n}; ROLLBACK",
    "SELECT * FROM stock AS s, LATERAL (SELECT ck.decrement('stock', s.sku, 'q4')) AS x WHERE s.sku = {n}",
    "SELECT ck.xact_lock(n.name, g) FROM ck.lock_namespaces AS n, generate_series(1, {n}) AS g",
    "SELECT ck.session_lock('outbox', g), ck.session_unlock('outbox', g) FROM generate_series(1, {n}) AS g",
    "SELECT ck.session_lock(7, g), ck.session_unlock(7, g) FROM generate_series(1, {n}) AS g",
    "SELECT ck.transition('orders', o.id, 'state', o.state::text, {state}) FROM orders AS o WHERE o.id = {n}",
    "SELECT ck.increment('stock', {n}, 'q4', 1, 1000000)",
    "SELECT count(*) FROM ck.find_overlaps('slots', 'during', '{{}}', {n})",
    "SELECT ck.overlap_guard_ddl('slots', 'busy', '{{room}}')",
    "SELECT ck.unique_guard_ddl('stock', '{{code}}', 'q4 > {n}')",
    # a fixed name: made once, then refused as existing (42710), so guards do not pile up
    "SELECT ck.add_overlap_guard('bookings', 'during', '{{room}}', 'fuzz_guard')",
    "SELECT ck.session_lock(7, g, '1 second'), ck.session_lock(7, g), ck.session_unlock(7, g), ck.session_unlock(7, g) FROM generate_series(1, {n}) AS g",
    # A key paused (committed) for the cases that follow, until a later case resumes it: claims,
    # acknowledgements, cancels, revived dead letters, limits and enqueues meet paused keys with
    # jobs (mail's limited, jobs' unlimited, fed here).
    "SELECT ck.pause_queue({pq}, 'tenant:' || {n} % 3)",
    "SELECT ck.pause_queue({pq}, 'tenant:' || {n} % 3)",
    "SELECT ck.resume_queue({pq}, 'tenant:' || {n} % 3)",
    "SELECT ck.resume_queue(p.queue, p.concurrency_key) FROM ck.paused_keys AS p",
    "SELECT count(ck.enqueue('jobs', '{{}}', concurrency_key => 'tenant:' || g % 3)) FROM generate_series(1, {n}) AS g",
    "SELECT ck.set_concurrency_limit('mail', 'tenant:' || {n} % 3, {n} - 1)",
    # leases of paused keys' jobs run out: the claim parks them, unclaimed
    "BEGIN; UPDATE jobs SET run_at = now() WHERE lease_token IS NOT NULL AND concurrency_key IN (SELECT concurrency_key FROM ck.paused_keys); "
    "SELECT count(*) FROM ck.claim('jobs', {n}); COMMIT",
    "BEGIN; UPDATE mail SET run_at = now() WHERE lease_token IS NOT NULL AND concurrency_key IN (SELECT concurrency_key FROM ck.paused_keys); "
    "SELECT count(*) FROM ck.claim_wait('mail', {n}, NULL, '0'); COMMIT",
    # pause, claim and resume in one transaction
    "BEGIN; SELECT ck.pause_queue({pq}, 'tenant:' || {n} % 3); SELECT count(*) FROM ck.claim({pq}, 5); "
    "SELECT ck.resume_queue({pq}, 'tenant:' || {n} % 3); COMMIT",
]


def call_text(name, args):
    # internals are named with their schema (ck_internal)
    return "%s(%s)" % (name if "." in name else "ck." + name, ", ".join(args))


def scenario():
    s = rng.choice(SCENARIOS).format(
        n=rng.choice(["1", "2", "5"]), iv=iv(), col=pick(["'q2'", "'q4'", "'q8'", "'qn'", "'qd'"], BAD_NAMES),
        amount=pick(AMOUNTS, BAD_AMOUNTS), bound=pick(BOUNDS, BAD_BOUNDS), state=pick(STATES, BAD_TEXTS),
        pq=rng.choice(QUEUES))
    if "FROM c)" in s:
        s = "WITH c AS (SELECT * FROM ck.claim('jobs', 3)) " + s
    return s


def statement(name):
    build, srf, _ = FUNCS[name]
    call = call_text(name, build())
    if name == "retry":
        return "CALL " + call
    if srf and rng.random() < 0.7:
        return "SELECT * FROM " + call + (" LIMIT 1" if rng.random() < 0.2 else "")
    return "SELECT " + call


SECONDS = [name for name, (_, _, rolled_back) in FUNCS.items() if not rolled_back]


def case():
    if rng.random() < 0.08:
        stmt = scenario()
        rolled_back = False
        name = "(scenario)"
    else:
        name = rng.choice(list(FUNCS))
        stmt = statement(name)
        rolled_back = FUNCS[name][2]
    second = statement(rng.choice(SECONDS)) if rng.random() < 0.3 else None
    r = rng.random()
    if rolled_back:   # DDL-making calls: never let them pile up
        ctx = rng.choice(["BEGIN; {s}; ROLLBACK;", "BEGIN; {s}; {t}; ROLLBACK;",
                          "BEGIN; SAVEPOINT a; {s}; ROLLBACK TO SAVEPOINT a; {t}; ROLLBACK;",
                          "BEGIN; {s}; SELECT * FROM ck.claim('q_new'); SELECT ck.enqueue('q_new'); ROLLBACK;"])
    elif r < 0.40:
        ctx = "{s};"
    elif r < 0.48:
        ctx = "BEGIN; {s}; {t}; COMMIT;"
    elif r < 0.54:
        ctx = "BEGIN; {s}; ROLLBACK;"
    elif r < 0.60:
        ctx = "BEGIN; SAVEPOINT a; {s}; ROLLBACK TO SAVEPOINT a; {t}; COMMIT;"
    elif r < 0.66:
        # an error caught in PL/pgSQL (a subtransaction abort inside our code's caller); an
        # internal error is raised again so that it is counted
        ctx = ("DO $f$ BEGIN EXECUTE {qs}; EXCEPTION WHEN internal_error THEN RAISE; "
               "WHEN others THEN NULL; END $f$;")
    elif r < 0.70:
        ctx = "SET statement_timeout = '{ms}ms'; {s}; RESET statement_timeout;"
    elif r < 0.74:
        ctx = "BEGIN ISOLATION LEVEL {iso}; {s}; {t}; COMMIT;"
    elif r < 0.78:
        ctx = "BEGIN; SET LOCAL force_parallel_mode = on; SET LOCAL parallel_setup_cost = 0; {s}; COMMIT;"
    elif r < 0.82:
        ctx = "PREPARE fz AS {s}; EXECUTE fz; EXECUTE fz; DEALLOCATE fz;"
    elif r < 0.86:
        ctx = "BEGIN; DECLARE c SCROLL CURSOR FOR {s}; FETCH 1 FROM c; FETCH LAST FROM c; FETCH FIRST FROM c; CLOSE c; COMMIT;"
    elif r < 0.90:
        ctx = rng.choice(["BEGIN; ALTER TABLE stock ADD COLUMN tmpc int; {s}; {t}; ROLLBACK;",
                          "BEGIN; ALTER TABLE stock RENAME COLUMN q4 TO q4x; {s}; ROLLBACK;",
                          "BEGIN; ALTER TABLE jobs ADD COLUMN extra int DEFAULT 7; {s}; {t}; ROLLBACK;",
                          "BEGIN; ALTER TABLE stock DROP CONSTRAINT stock_pkey CASCADE; {s}; ROLLBACK;",
                          "BEGIN; UPDATE ck.queues SET lease = '1 hour', max_attempts = 1; {s}; {t}; ROLLBACK;",
                          "BEGIN; DELETE FROM ck.queues; {s}; ROLLBACK;",
                          "BEGIN; DROP TABLE jobs_dead; {s}; ROLLBACK;"])
    elif r < 0.94:
        ctx = "SET ROLE ck_fuzz_peer; {s}; {t}; RESET ROLE;"
    elif r < 0.97:
        ctx = "SET search_path = pg_temp, ck, public; {s}; RESET search_path;"
    else:
        ctx = "BEGIN; {s}; SELECT pg_sleep(0.001); {t}; COMMIT;"
    t = second or "SELECT ck.held_locks()"
    line = ctx.format(s=stmt, t=t, qs=q(stmt), ms=rng.choice([1, 2, 5]),
                      iso=rng.choice(["REPEATABLE READ", "SERIALIZABLE", "READ COMMITTED"]))
    return name, line.replace("\n", " ")


def generate(count, seed):
    """[(function or scenario name, line)] of count cases."""
    rng.seed(seed)
    cases = []
    for i in range(count):
        if i % 200 == 199:   # keep the queues fed and the lock table small
            cases.append(("(refill)",
                          "SELECT count(ck.enqueue('jobs', '{}', now(), g % 3)) FROM generate_series(1, 40) AS g; "
                          "SELECT count(ck.enqueue('mail')) FROM generate_series(1, 10); "
                          # a job with a dependant completes: the departure trigger runs in every fuzz
                          "WITH c AS (SELECT * FROM ck.claim('jobs')), d AS (SELECT ck.enqueue('jobs', after => "
                          "ARRAY[c.id]) FROM c) SELECT count(ck.complete('jobs', c.id, c.lease_token)) FROM c, d; "
                          "SELECT ck.session_unlock_all(); "
                          # one call of ck.add_overlap_guard that returns (rolled back): the random draws
                          # make it with arguments that mostly fail, and a short fuzz could see none return
                          "BEGIN; SELECT ck.add_overlap_guard('bookings', 'during', '{room}', 'fuzz_refill_guard'); "
                          "ROLLBACK;"))
            continue
        cases.append(case())
    return cases


HEADER = ["\\set VERBOSITY sqlstate", "\\set SHOW_CONTEXT never", "SET statement_timeout = '2s';",
          "SET client_min_messages = error;"]
ERROR_LINE = re.compile(r"^psql:[^:]*:(\d+): (ERROR|FATAL|PANIC):\s+(\S+)")
LOCATED = re.compile(r"^psql:[^:]*:(\d+): ")


def wait_for_server(psql, deadline=120):
    end = time.time() + deadline
    while time.time() < end:
        r = subprocess.run(psql + ["-c", "SELECT 1"], capture_output=True, text=True)
        if r.returncode == 0:
            return True
        time.sleep(1)
    return False


def run(count, seed, workdir, psql_opts):
    cases = generate(count, seed)
    psql = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=0", "-o", os.devnull] + psql_opts
    first_error = {}             # case index -> SQLSTATE of its first error
    crashes = []                 # case indexes after which the connection was lost
    start = 0
    finished = False
    t0 = time.time()
    while start < len(cases):
        chunk = os.path.join(workdir, "calls.sql")
        with open(chunk, "w") as f:
            f.write("\n".join(HEADER) + "\n")
            for _, line in cases[start:]:
                f.write(line + "\n")
        r = subprocess.run(psql + ["-f", chunk], capture_output=True, text=True, errors="replace")
        last = None
        for err in r.stderr.splitlines():
            m = LOCATED.match(err)
            if not m:
                continue
            idx = start + int(m.group(1)) - len(HEADER) - 1
            if idx < start:
                continue
            last = idx
            m = ERROR_LINE.match(err)
            if m and idx not in first_error:
                first_error[idx] = m.group(3)
            if m and m.group(3) == "XX000":
                first_error[idx] = "XX000"   # count an internal error even after another error
        if r.returncode == 0:
            finished = True
            break
        if r.returncode != 2 or last is None:
            print("# psql failed (exit %d): %s" % (r.returncode, r.stderr.strip()[-500:]))
            crashes.append(last if last is not None else start)
            break
        crashes.append(last)
        first_error[last] = first_error.get(last, "lost")
        print("# connection lost at case %d: %s" % (last + 1, cases[last][1][:300]))
        if not wait_for_server(psql):
            print("# the server did not come back")
            break
        start = last + 1
    elapsed = time.time() - t0

    by_state = Counter(first_error.values())
    per_func = defaultdict(Counter)
    for i, (name, _) in enumerate(cases):
        per_func[name][first_error.get(i, "ok")] += 1
    with open(os.path.join(workdir, "internal.txt"), "w") as f:
        shown = Counter()   # at most 5 examples per function
        for i, state in sorted(first_error.items()):
            if state == "XX000":
                shown[cases[i][0]] += 1
                if shown[cases[i][0]] <= 5:
                    f.write("case %d (%s): %s\n" % (i + 1, cases[i][0], cases[i][1]))
    with open(os.path.join(workdir, "crashes.txt"), "w") as f:
        for i in crashes:
            f.write("case %d: %s\n" % (i + 1, cases[i][1]))
    print("# generator: %d cases (seed %d) in %.1f s; %d without error, %d with an error"
          % (len(cases), seed, elapsed, len(cases) - len(first_error), len(first_error)))
    print("# generator: first SQLSTATE per case: " +
          ", ".join("%s %d" % (k, v) for k, v in sorted(by_state.items(), key=lambda kv: -kv[1])))
    for name in sorted(per_func):
        c = per_func[name]
        print("#   %-20s %5d cases, %5d ok; %s" % (name, sum(c.values()), c["ok"],
              " ".join("%s:%d" % (k, v) for k, v in sorted(c.items()) if k != "ok")))
    print("RESULT cases=%d errors=%d internal=%d crashes=%d complete=%d"
          % (len(cases), len(first_error), by_state["XX000"], len(crashes),
             1 if finished or start >= len(cases) else 0))


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        for _, line in generate(int(sys.argv[2]), int(sys.argv[3])):
            print(line)
    elif sys.argv[1] == "run":
        run(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:])
    else:
        sys.exit(__doc__)
