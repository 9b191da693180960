-- The labels of every function of the extension are part of its contract: signature,
-- return type, volatility, parallel safety, strictness and SECURITY INVOKER. Since 0.2.0
-- no function carries a SET clause (proconfig is NULL): everything the extension runs is
-- schema-qualified, so the caller's search_path reaches nothing of it (sql/search_path.sql
-- proves that under a hostile path), and a user's triggers run with the user's own path.
-- A function missing from the list below fails the completeness test.
BEGIN;
SET LOCAL search_path = public;

CREATE TEMP TABLE expected_functions (
    name text, args text[], returns text, volatility text, parallel text, strict boolean
);
INSERT INTO expected_functions VALUES
    ('try_decrement',       '{regclass,"\"any\"",name,bigint,name}',                      'bigint',  'volatile',  'unsafe', false),
    ('decrement',           '{regclass,"\"any\"",name,bigint,name}',                      'bigint',  'volatile',  'unsafe', false),
    ('try_increment',       '{regclass,"\"any\"",name,bigint,bigint,name}',               'bigint',  'volatile',  'unsafe', false),
    ('increment',           '{regclass,"\"any\"",name,bigint,bigint,name}',               'bigint',  'volatile',  'unsafe', false),
    ('try_transition',      '{regclass,"\"any\"",name,text,text,name}',                   'boolean', 'volatile',  'unsafe', false),
    ('transition',          '{regclass,"\"any\"",name,text,text,name}',                   'boolean', 'volatile',  'unsafe', false),
    ('try_update_if_version', '{regclass,"\"any\"",bigint,jsonb,name,name}',              'bigint',  'volatile',  'unsafe', false),
    ('update_if_version',   '{regclass,"\"any\"",bigint,jsonb,name,name}',                'bigint',  'volatile',  'unsafe', false),
    ('version_guard_ddl',   '{regclass,name}',                                        'text',    'stable',    'safe',   false),
    ('add_version_guard',   '{regclass,name}',                                        'text',    'volatile',  'unsafe', false),
    ('lock_rows',           '{regclass,"\"any\"",text,interval,name}',                    'bigint',  'volatile',  'unsafe', false),
    ('sqlstate_action',     '{text}',                                                 'text',    'immutable', 'safe',   true),
    ('create_queue',        '{text,interval,integer,boolean}',                        'regclass', 'volatile', 'unsafe', false),
    ('drop_queue',          '{regclass}',                                             'void',    'volatile',  'unsafe', false),
    ('enqueue',             '{regclass,jsonb,"timestamp with time zone",integer,text,interval,text,bigint[]}', 'bigint', 'volatile', 'unsafe', false),
    ('enqueue_unique',      '{regclass,text,jsonb,"timestamp with time zone",integer,interval,text}', 'record', 'volatile', 'unsafe', false),
    ('set_concurrency_limit', '{regclass,text,integer}',                              'void',    'volatile',  'unsafe', false),
    ('distribute_queue',    '{regclass,integer}',                                     'void',    'volatile',  'unsafe', false),
    ('cancel',              '{regclass,bigint}',                                      'text',    'volatile',  'unsafe', false),
    ('claim',               '{regclass,integer,interval}',                            'setof record', 'volatile', 'unsafe', false),
    ('claim_wait',          '{regclass,integer,interval,interval}',                   'setof record', 'volatile', 'unsafe', false),
    ('complete',            '{regclass,bigint,bigint}',                               'boolean', 'volatile',  'unsafe', false),
    ('complete_and_claim',  '{regclass,bigint,bigint,integer,interval}',              'setof record', 'volatile', 'unsafe', false),
    ('complete_many',       '{regclass,bigint[],bigint[]}',                           'setof bigint', 'volatile', 'unsafe', false),
    ('fail',                '{regclass,bigint,bigint,text,interval}',                 'text',    'volatile',  'unsafe', false),
    ('extend_lease',        '{regclass,bigint,bigint,interval}',                      'timestamp with time zone', 'volatile', 'unsafe', false),
    ('try_complete',        '{regclass,bigint,bigint}',                               'boolean', 'volatile',  'unsafe', false),
    ('try_complete_many',   '{regclass,bigint[],bigint[]}',                           'setof bigint', 'volatile', 'unsafe', false),
    ('try_fail',            '{regclass,bigint,bigint,text,interval}',                 'text',    'volatile',  'unsafe', false),
    ('try_extend_lease',    '{regclass,bigint,bigint,interval}',                      'timestamp with time zone', 'volatile', 'unsafe', false),
    ('adopt_queue',         '{regclass,interval,integer,boolean}',                    'regclass', 'volatile', 'unsafe', false),
    ('retry_dead',          '{regclass,bigint}',                                      'boolean', 'volatile',  'unsafe', false),
    ('purge_dead',          '{regclass,interval}',                                    'bigint',  'volatile',  'unsafe', false),
    ('retry_dead_matching', '{regclass,text,text,interval,integer,jsonb,integer}',    'bigint',  'volatile',  'unsafe', false),
    ('purge_dead_matching', '{regclass,text,text,interval,integer,jsonb,integer}',    'bigint',  'volatile',  'unsafe', false),
    -- 1.1.0 (issue 47): pause, rate limits, history, results, waiting for a job
    ('pause_queue',         '{regclass,text}',                                        'boolean', 'volatile',  'unsafe', false),
    ('resume_queue',        '{regclass,text}',                                        'boolean', 'volatile',  'unsafe', false),
    ('try_rate',            '{text,integer,interval}',                                'boolean', 'volatile',  'unsafe', false),
    ('rate',                '{text,integer,interval}',                                'boolean', 'volatile',  'unsafe', false),
    ('set_rate_limit',      '{regclass,text,integer,interval}',                       'void',    'volatile',  'unsafe', false),
    ('set_history',         '{regclass,interval,interval}',                           'regclass', 'volatile', 'unsafe', false),
    ('maintain_history',    '{regclass}',                                             'record',  'volatile',  'unsafe', false),
    ('history_counts',      '{regclass,"timestamp with time zone"}',                  'setof record', 'stable', 'restricted', false),
    ('job',                 '{regclass,bigint}',                                      'record',  'stable',    'restricted', false),
    ('await_job',           '{regclass,bigint,interval}',                             'record',  'volatile',  'unsafe', false),
    ('complete',            '{regclass,bigint,bigint,jsonb}',                         'boolean', 'volatile',  'unsafe', false),
    ('try_complete',        '{regclass,bigint,bigint,jsonb}',                         'boolean', 'volatile',  'unsafe', false),
    ('complete_and_claim',  '{regclass,bigint,bigint,integer,interval,jsonb}',        'setof record', 'volatile', 'unsafe', false),
    ('complete_many',       '{regclass,bigint[],bigint[],jsonb[]}',                   'setof bigint', 'volatile', 'unsafe', false),
    ('try_complete_many',   '{regclass,bigint[],bigint[],jsonb[]}',                   'setof bigint', 'volatile', 'unsafe', false),
    ('queue_stats',         '{regclass}',                                             'record',  'stable',    'restricted', false),
    ('queue_activity',      '{}',                                                     'setof record', 'volatile', 'restricted', false),
    ('claim_path',          '{regclass}',                                             'record',  'volatile',  'restricted', false),
    ('claim_wait_mode',     '{}',                                                     'text',    'stable',    'safe',   false),
    ('lock_namespace',      '{text}',                                                 'integer', 'volatile',  'unsafe', false),
    ('xact_lock',           '{integer,bigint,interval}',                              'void',    'volatile',  'unsafe', false),
    ('xact_lock',           '{text,bigint,interval}',                                 'void',    'volatile',  'unsafe', false),
    ('try_xact_lock',       '{integer,bigint}',                                       'boolean', 'volatile',  'unsafe', false),
    ('try_xact_lock',       '{text,bigint}',                                          'boolean', 'volatile',  'unsafe', false),
    ('session_lock',        '{integer,bigint,interval}',                              'void',    'volatile',  'unsafe', false),
    ('session_lock',        '{text,bigint,interval}',                                 'void',    'volatile',  'unsafe', false),
    ('session_unlock',      '{integer,bigint}',                                       'void',    'volatile',  'unsafe', false),
    ('session_unlock',      '{text,bigint}',                                          'void',    'volatile',  'unsafe', false),
    ('session_unlock_all',  '{}',                                                     'void',    'volatile',  'unsafe', false),
    ('held_locks',          '{}',                                                     'setof record', 'volatile', 'unsafe', false),
    ('lock_waits',          '{}',                                                     'setof record', 'volatile', 'unsafe', false),
    ('set_lock_timeout',    '{interval}',                                             'void',    'volatile',  'unsafe', false),
    ('retry',               '{text,text,integer,boolean,integer}',                    'record',  'volatile',  'unsafe', false),
    ('current_attempt',     '{}',                                                     'integer', 'volatile',  'unsafe', false),
    ('retry_stats',         '{}',                                                     'record',  'volatile',  'unsafe', false),
    ('overlap_guard_ddl',   '{regclass,name,name[],name}',                            'text',    'stable',    'safe',   false),
    ('find_overlaps',       '{regclass,name,name[],integer}',                         'setof record', 'stable', 'restricted', false),
    ('add_overlap_guard',   '{regclass,name,name[],name}',                            'text',    'volatile',  'unsafe', false),
    ('unique_guard_ddl',    '{regclass,name[],text}',                                 'text',    'stable',    'safe',   false),
    ('scan_check',          '{text}',                                                 'setof record', 'volatile', 'unsafe', false),
    ('volatility_audit',    '{name}',                                                 'setof record', 'stable', 'unsafe', false),
    ('lock_audit',          '{name}',                                                 'setof record', 'stable', 'unsafe', false),
    ('race_audit',          '{name}',                                                 'setof record', 'stable', 'unsafe', false),
    ('race_reports',        '{}',                                                     'setof record', 'volatile', 'restricted', false),
    ('race_reports_reset',  '{}',                                                     'bigint',  'volatile',  'unsafe', false);

-- Internals (trigger functions, Citus plumbing, what only the extension calls): schema
-- ck_internal, out of \df ck.*.
CREATE TEMP TABLE expected_internal (LIKE expected_functions);
INSERT INTO expected_internal VALUES
    ('version_guard',       '{}',                                                     'trigger', 'volatile',  'unsafe', false),
    ('attach_queue_shard',  '{regclass,regclass,integer,integer,integer,bigint,interval,integer}', 'void', 'volatile', 'unsafe', false),
    ('detach_queue_shard',  '{regclass}',                                             'void',    'volatile',  'unsafe', false),
    ('register_distributed_queue', '{text,integer[],text[]}',                          'void',    'volatile',  'unsafe', false),
    ('claim_frontier',      '{regclass}',                                             'setof record', 'volatile', 'restricted', false),
    ('queue_ready',         '{}',                                                     'trigger', 'volatile',  'unsafe', false),
    ('queue_changed',       '{}',                                                     'trigger', 'volatile',  'unsafe', false),
    ('queue_left',          '{}',                                                     'trigger', 'volatile',  'unsafe', false),
    ('queue_dependency_left', '{}',                                                   'trigger', 'volatile',  'unsafe', false),
    ('notify_queue',        '{}',                                                     'trigger', 'volatile',  'unsafe', false),
    ('queues_changed',      '{}',                                                     'trigger', 'volatile',  'unsafe', false),
    ('queue_timeout_local', '{}',                                                     'trigger', 'volatile',  'unsafe', false),
    ('history_queue',       '{regclass,boolean}',                                     'ck.queues', 'stable', 'safe',  false),
    ('queue_rates_dropped', '{}',                                                     'trigger', 'volatile',  'unsafe', false),
    ('queue_rates_distributed', '{}',                                                 'trigger', 'volatile',  'unsafe', false),
    ('settle_paused_key',   '{regclass,text}',                                        'void',    'volatile',  'unsafe', false),
    ('queue_paused_keys_dropped', '{}',                                               'trigger', 'volatile',  'unsafe', false),
    ('queue_paused_keys_distributed', '{}',                                           'trigger', 'volatile',  'unsafe', false),
    ('session_locks_held',  '{}',                                                     'setof record', 'volatile', 'unsafe', false),
    ('race_check',          '{regclass,xid,tid,text,text}',                           'boolean', 'volatile',  'unsafe', false);

CREATE TEMP VIEW expected_all AS
SELECT 'ck' AS schema, e.* FROM expected_functions AS e
UNION ALL SELECT 'ck_internal', i.* FROM expected_internal AS i;

CREATE TEMP VIEW expected_procs AS
SELECT e.*, format('%s.%s(%s)', e.schema, e.name, array_to_string(e.args, ','))::regprocedure AS oid
FROM expected_all e;

SELECT plan((SELECT count(*)::int * 7 FROM expected_all) + 1);

SELECT has_function(schema, name, args, format('%s.%s(%s) exists', schema, name, array_to_string(args, ', ')))
FROM expected_all ORDER BY schema, name;

SELECT function_returns(schema, name, args, returns, format('%s.%s returns %s', schema, name, returns))
FROM expected_all ORDER BY schema, name;

SELECT volatility_is(schema, name, args, volatility, format('%s.%s is %s', schema, name, upper(volatility)))
FROM expected_all ORDER BY schema, name;

SELECT CASE WHEN strict THEN is_strict(schema, name, args, format('%s.%s is STRICT', schema, name))
            ELSE isnt_strict(schema, name, args, format('%s.%s is not STRICT (NULL arguments raise)', schema, name))
       END
FROM expected_all ORDER BY schema, name;

SELECT isnt_definer(schema, name, args, format('%s.%s is SECURITY INVOKER', schema, name))
FROM expected_all ORDER BY schema, name;

SELECT is(p.proparallel::text, left(e.parallel, 1), format('%s.%s is PARALLEL %s', e.schema, e.name, upper(e.parallel)))
FROM expected_procs e JOIN pg_proc p ON p.oid = e.oid ORDER BY e.schema, e.name;

SELECT is(p.proconfig, NULL, format('%s.%s has no SET clause (runs with the caller''s search_path)', e.schema, e.name))
FROM expected_procs e JOIN pg_proc p ON p.oid = e.oid ORDER BY e.schema, e.name;

SELECT set_eq(
    $$SELECT oid::regprocedure::text FROM pg_proc WHERE pronamespace IN ('ck'::regnamespace, 'ck_internal'::regnamespace)$$,
    $$SELECT oid::text FROM expected_procs$$,
    'every function in schemas ck and ck_internal is listed here');

SELECT * FROM finish();
ROLLBACK;
