-- The labels of every function of the extension are part of its contract: signature,
-- return type, volatility, parallel safety, strictness, SECURITY INVOKER and a pinned
-- search_path. A function missing from the list below fails the completeness test.
BEGIN;
SET LOCAL search_path = public;

CREATE TEMP TABLE expected_functions (
    name text, args text[], returns text, volatility text, parallel text, strict boolean
);
INSERT INTO expected_functions VALUES
    ('try_decrement',       '{regclass,name,anyelement,bigint,name}',                 'numeric', 'volatile',  'unsafe', false),
    ('decrement',           '{regclass,name,anyelement,bigint,name}',                 'numeric', 'volatile',  'unsafe', false),
    ('try_increment',       '{regclass,name,anyelement,bigint,numeric,name}',         'numeric', 'volatile',  'unsafe', false),
    ('increment',           '{regclass,name,anyelement,bigint,numeric,name}',         'numeric', 'volatile',  'unsafe', false),
    ('transition',          '{regclass,anyelement,name,text,text,name}',              'boolean', 'volatile',  'unsafe', false),
    ('transition_or_raise', '{regclass,anyelement,name,text,text,name}',              'void',    'volatile',  'unsafe', false),
    ('sqlstate_action',     '{text}',                                                 'text',    'immutable', 'safe',   true);

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

SELECT is(p.proconfig, ARRAY['search_path=pg_catalog, pg_temp'], format('ck.%s pins its search_path', e.name))
FROM expected_procs e JOIN pg_proc p ON p.oid = e.oid ORDER BY e.name;

SELECT set_eq(
    $$SELECT oid::regprocedure::text FROM pg_proc WHERE pronamespace = 'ck'::regnamespace$$,
    $$SELECT oid::text FROM expected_procs$$,
    'every function in schema ck is listed here');

SELECT * FROM finish();
ROLLBACK;
