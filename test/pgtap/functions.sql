-- The labels of every function of the extension are part of its contract: signature,
-- return type, volatility, parallel safety, strictness, SECURITY INVOKER and a pinned
-- search_path for every function that builds SQL from its arguments. Not pinned:
-- ck.create_queue, which resolves the new queue's name with the caller's search_path as
-- CREATE TABLE does and schema-qualifies everything it runs; ck.retry, a procedure that
-- commits, which PostgreSQL forbids to procedures with SET clauses, and whose statements
-- are the caller's; ck.scan_check, whose query is the caller's too; and the functions that
-- run no SQL (lock calls by number, sqlstate_action, retry counters) or only fixed,
-- schema-qualified SQL (lock calls by name; sql/advisory_lock.sql runs them under a
-- hostile search_path).
-- A function missing from the list below fails the completeness test.
BEGIN;
SET LOCAL search_path = public;

CREATE TEMP TABLE expected_functions (
    name text, args text[], returns text, volatility text, parallel text, strict boolean,
    pinned boolean
);
INSERT INTO expected_functions VALUES
    ('try_decrement',       '{regclass,name,anyelement,bigint,name}',                 'numeric', 'volatile',  'unsafe', false, true),
    ('decrement',           '{regclass,name,anyelement,bigint,name}',                 'numeric', 'volatile',  'unsafe', false, true),
    ('try_increment',       '{regclass,name,anyelement,bigint,numeric,name}',         'numeric', 'volatile',  'unsafe', false, true),
    ('increment',           '{regclass,name,anyelement,bigint,numeric,name}',         'numeric', 'volatile',  'unsafe', false, true),
    ('transition',          '{regclass,anyelement,name,text,text,name}',              'boolean', 'volatile',  'unsafe', false, true),
    ('transition_or_raise', '{regclass,anyelement,name,text,text,name}',              'void',    'volatile',  'unsafe', false, true),
    ('sqlstate_action',     '{text}',                                                 'text',    'immutable', 'safe',   true, false),
    ('create_queue',        '{text,interval,integer,boolean}',                        'regclass', 'volatile', 'unsafe', false, false),
    ('drop_queue',          '{regclass}',                                             'void',    'volatile',  'unsafe', false, true),
    ('enqueue',             '{regclass,jsonb,"timestamp with time zone",integer}',    'bigint',  'volatile',  'unsafe', false, true),
    ('claim',               '{regclass,integer,interval}',                            'setof record', 'volatile', 'unsafe', false, true),
    ('claim_wait',          '{regclass,integer,interval,interval}',                   'setof record', 'volatile', 'unsafe', false, true),
    ('complete',            '{regclass,bigint,bigint}',                               'boolean', 'volatile',  'unsafe', false, true),
    ('complete_many',       '{regclass,bigint[],bigint[]}',                           'setof bigint', 'volatile', 'unsafe', false, true),
    ('fail',                '{regclass,bigint,bigint,text,interval}',                 'text',    'volatile',  'unsafe', false, true),
    ('extend_lease',        '{regclass,bigint,bigint,interval}',                      'timestamp with time zone', 'volatile', 'unsafe', false, true),
    ('retry_dead',          '{regclass,bigint}',                                      'boolean', 'volatile',  'unsafe', false, true),
    ('purge_dead',          '{regclass,interval}',                                    'bigint',  'volatile',  'unsafe', false, true),
    ('queue_stats',         '{regclass}',                                             'record',  'stable',    'restricted', false, true),
    ('notify_queue',        '{}',                                                     'trigger', 'volatile',  'unsafe', false, true),
    ('queues_changed',      '{}',                                                     'trigger', 'volatile',  'unsafe', false, false),
    ('lock_namespace',      '{text}',                                                 'integer', 'volatile',  'unsafe', false, false),
    ('xact_lock',           '{integer,integer,interval}',                             'void',    'volatile',  'unsafe', false, false),
    ('xact_lock',           '{text,integer,interval}',                                'void',    'volatile',  'unsafe', false, false),
    ('try_xact_lock',       '{integer,integer}',                                      'boolean', 'volatile',  'unsafe', false, false),
    ('try_xact_lock',       '{text,integer}',                                         'boolean', 'volatile',  'unsafe', false, false),
    ('session_lock',        '{integer,integer,interval}',                             'void',    'volatile',  'unsafe', false, false),
    ('session_lock',        '{text,integer,interval}',                                'void',    'volatile',  'unsafe', false, false),
    ('session_unlock',      '{integer,integer}',                                      'void',    'volatile',  'unsafe', false, false),
    ('session_unlock',      '{text,integer}',                                         'void',    'volatile',  'unsafe', false, false),
    ('session_unlock_all',  '{}',                                                     'void',    'volatile',  'unsafe', false, false),
    ('session_locks_held',  '{}',                                                     'setof record', 'volatile', 'unsafe', false, false),
    ('held_locks',          '{}',                                                     'setof record', 'volatile', 'unsafe', false, true),
    ('lock_waits',          '{}',                                                     'setof record', 'volatile', 'unsafe', false, true),
    ('set_lock_timeout',    '{interval}',                                             'void',    'volatile',  'unsafe', false, false),
    ('retry',               '{text,text,integer,boolean,integer}',                    'record',  'volatile',  'unsafe', false, false),
    ('current_attempt',     '{}',                                                     'integer', 'volatile',  'unsafe', false, false),
    ('retry_stats',         '{}',                                                     'record',  'volatile',  'unsafe', false, false),
    ('overlap_guard_ddl',   '{regclass,name,name[],name}',                            'text',    'stable',    'safe',   false, true),
    ('find_overlaps',       '{regclass,name,name[],integer}',                         'setof record', 'stable', 'restricted', false, true),
    ('add_overlap_guard',   '{regclass,name,name[],name}',                            'text',    'volatile',  'unsafe', false, true),
    ('unique_guard_ddl',    '{regclass,name[],text}',                                 'text',    'stable',    'safe',   false, true),
    ('scan_check',          '{text}',                                                 'setof record', 'volatile', 'unsafe', false, false),
    ('volatility_audit',    '{name}',                                                 'setof record', 'stable', 'unsafe', false, true);

CREATE TEMP VIEW expected_procs AS
SELECT e.*, format('ck.%s(%s)', e.name, array_to_string(e.args, ','))::regprocedure AS oid
FROM expected_functions e;

SELECT plan((SELECT count(*)::int * 7 FROM expected_functions) + 1);

SELECT has_function('ck', name, args, format('ck.%s(%s) exists', name, array_to_string(args, ', ')))
FROM expected_functions ORDER BY name;

SELECT function_returns('ck', name, args, returns, format('ck.%s returns %s', name, returns))
FROM expected_functions ORDER BY name;

SELECT volatility_is('ck', name, args, volatility, format('ck.%s is %s', name, upper(volatility)))
FROM expected_functions ORDER BY name;

SELECT CASE WHEN strict THEN is_strict('ck', name, args, format('ck.%s is STRICT', name))
            ELSE isnt_strict('ck', name, args, format('ck.%s is not STRICT (NULL arguments raise)', name))
       END
FROM expected_functions ORDER BY name;

SELECT isnt_definer('ck', name, args, format('ck.%s is SECURITY INVOKER', name))
FROM expected_functions ORDER BY name;

SELECT is(p.proparallel::text, left(e.parallel, 1), format('ck.%s is PARALLEL %s', e.name, upper(e.parallel)))
FROM expected_procs e JOIN pg_proc p ON p.oid = e.oid ORDER BY e.name;

SELECT CASE WHEN e.pinned
            THEN is(p.proconfig, ARRAY['search_path=pg_catalog, pg_temp'], format('ck.%s pins its search_path', e.name))
            ELSE is(p.proconfig, NULL, format('ck.%s runs with the caller''s search_path', e.name))
       END
FROM expected_procs e JOIN pg_proc p ON p.oid = e.oid ORDER BY e.name;

SELECT set_eq(
    $$SELECT oid::regprocedure::text FROM pg_proc WHERE pronamespace = 'ck'::regnamespace$$,
    $$SELECT oid::text FROM expected_procs$$,
    'every function in schema ck is listed here');

SELECT * FROM finish();
ROLLBACK;
