#!/usr/bin/env bash
# ALTER EXTENSION concurrency_kit UPDATE from 0.1.0, the oldest released version, to the control
# file's default_version, walking every step of the update path (whatever versions are added
# later). Prints TAP. Needs psql, bash and coreutils only.
#
# Two databases:
#   A (ck_upgrade_old):   CREATE EXTENSION ... VERSION '0.1.0', then state a user builds under
#                         0.1.0 (leased, dead and ready jobs, a lock namespace, a decremented
#                         stock table), then ALTER EXTENSION ... UPDATE;
#   B (ck_upgrade_fresh): CREATE EXTENSION at the default version.
# An upgraded install must be indistinguishable from a fresh one: the extension's objects are
# printed from the catalog of each database as sorted text rows ("category | object | attribute
# = value", no OIDs), and the two sets must be equal; the differing rows are printed as TAP
# diagnostics. Then the state made under 0.1.0 must keep working under the new version.
set -euo pipefail
cd "$(dirname "$0")/../.."

export PGOPTIONS='-c client_min_messages=warning'
db_a=ck_upgrade_old
db_b=ck_upgrade_fresh
oldest=0.1.0
default=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" concurrency_kit.control)

tmp=$(mktemp -d)
cleanup() {
    dropdb --if-exists --force "$db_a" 2>/dev/null || true
    dropdb --if-exists --force "$db_b" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

. "$(dirname "${BASH_SOURCE[0]}")/lib/assert.sh"
# is_true DB SQL: succeeds when SQL returns t in DB; otherwise prints what it returned.
is_true() {
    local got
    got=$(sql -d "$1" -c "$2" 2>&1) || true
    [[ $got == t ]] || { echo "got: ${got:-NULL or no row}"; return 1; }
}
check() { assert "$1" is_true "$2" "$3"; }   # check DESCRIPTION DB SQL
value() { sql -d "$1" -c "$2"; }              # value DB SQL: one value, for the descriptions
# needed DESCRIPTION COMMAND...: assert, for a step everything after it needs: when it fails, the
# script stops there (the rest would only repeat the failure).
needed() {
    local before=$fails
    assert "$@"
    if ((fails > before)); then
        echo "1..$n"
        exit 1
    fi
}

# The extension's objects as text rows, one attribute a row: "category | object | attribute =
# value". Objects are named by regprocedure / regclass / pg_describe_object text, never by OID,
# so that two databases can be compared; newlines in values are written \n so that every row is
# one line for sort, comm and diff. An object counts as the extension's when it is a member
# (pg_depend deptype 'e') or lives in schema ck. Rows that only data changes (a sequence's last
# value, the rows of ck.queues) are not printed: database A has used the extension, B has not.
catalog_sql=$(cat <<'SQL'
SET search_path = pg_catalog;
WITH ext AS (
    SELECT e.oid FROM pg_extension AS e WHERE e.extname = 'concurrency_kit'
), members AS (
    SELECT d.classid, d.objid, d.objsubid
    FROM pg_depend AS d JOIN ext ON d.refobjid = ext.oid
    WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
), funcs AS (
    SELECT p.oid FROM pg_proc AS p WHERE p.pronamespace = 'ck'::regnamespace
    UNION
    SELECT m.objid FROM members AS m WHERE m.classid = 'pg_proc'::regclass
), rels AS (
    -- tables, sequences, views, composite types; indexes are printed with their tables
    SELECT c.oid FROM pg_class AS c
    WHERE c.relnamespace = 'ck'::regnamespace AND c.relkind NOT IN ('i', 'I', 't')
    UNION
    SELECT m.objid FROM members AS m WHERE m.classid = 'pg_class'::regclass
), cols AS (
    SELECT a.*, row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS position
    FROM pg_attribute AS a JOIN rels AS r ON r.oid = a.attrelid
    WHERE a.attnum > 0 AND NOT a.attisdropped
), rows (cat, obj, attr, val) AS (
    SELECT 'function', p.oid::regprocedure::text, v.attr, v.val
    FROM funcs AS f JOIN pg_proc AS p ON p.oid = f.oid JOIN pg_language AS l ON l.oid = p.prolang
    CROSS JOIN LATERAL (VALUES
        ('result', pg_get_function_result(p.oid)),
        ('arguments', pg_get_function_arguments(p.oid)),
        ('kind', p.prokind::text),
        ('volatility', p.provolatile::text),
        ('parallel', p.proparallel::text),
        ('strict', p.proisstrict::text),
        ('security_definer', p.prosecdef::text),
        ('leakproof', p.proleakproof::text),
        ('returns_set', p.proretset::text),
        ('cost', p.procost::text),
        ('rows', p.prorows::text),
        ('support', p.prosupport::regproc::text),
        ('config', p.proconfig::text),
        ('language', l.lanname::text),
        ('source', p.prosrc),
        ('binary', p.probin),
        -- the whole CREATE statement: BEGIN ATOMIC bodies (empty prosrc), SET clauses, ...
        ('definition', CASE WHEN p.prokind <> 'a' THEN pg_get_functiondef(p.oid) END),
        ('comment', obj_description(p.oid, 'pg_proc')),
        ('acl', p.proacl::text),
        ('owner', pg_get_userbyid(p.proowner)::text)
    ) AS v (attr, val)
    UNION ALL
    SELECT 'relation', c.oid::regclass::text, v.attr, v.val
    FROM rels AS r JOIN pg_class AS c ON c.oid = r.oid
    CROSS JOIN LATERAL (VALUES
        ('kind', c.relkind::text),
        ('persistence', c.relpersistence::text),
        ('access_method', (SELECT am.amname::text FROM pg_am AS am WHERE am.oid = c.relam)),
        ('options', c.reloptions::text),
        ('row_security', c.relrowsecurity::text),
        ('force_row_security', c.relforcerowsecurity::text),
        ('replica_identity', c.relreplident::text),
        ('view', CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END),
        ('comment', obj_description(c.oid, 'pg_class')),
        ('acl', c.relacl::text),
        ('owner', pg_get_userbyid(c.relowner)::text)
    ) AS v (attr, val)
    UNION ALL
    SELECT 'column', format('%s.%I', a.attrelid::regclass, a.attname), v.attr, v.val
    FROM cols AS a
    LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    CROSS JOIN LATERAL (VALUES
        ('position', a.position::text),    -- the order SELECT * shows, dropped columns skipped
        ('type', format_type(a.atttypid, a.atttypmod)),
        ('not_null', a.attnotnull::text),
        ('default', pg_get_expr(d.adbin, d.adrelid)),
        ('identity', a.attidentity::text),
        ('generated', a.attgenerated::text),
        ('collation', (SELECT co.collname::text FROM pg_collation AS co WHERE co.oid = a.attcollation)),
        ('storage', a.attstorage::text),
        -- pg_attver=N, which this server build puts in every column's options, is a stamp
        -- of when the column was made, not a property of the extension: left out
        ('options', nullif(array(SELECT o FROM unnest(a.attoptions) AS o WHERE o NOT LIKE 'pg\_attver=%'), '{}')::text),
        ('comment', col_description(a.attrelid, a.attnum)),
        ('acl', a.attacl::text)
    ) AS v (attr, val)
    UNION ALL
    SELECT 'index', i.indexrelid::regclass::text, v.attr, v.val
    FROM pg_index AS i JOIN rels AS r ON r.oid = i.indrelid
    CROSS JOIN LATERAL (VALUES
        ('definition', pg_get_indexdef(i.indexrelid)),
        ('clustered', i.indisclustered::text),
        ('replica_identity', i.indisreplident::text),
        ('comment', obj_description(i.indexrelid, 'pg_class'))
    ) AS v (attr, val)
    UNION ALL
    SELECT 'constraint', format('%s %I', co.conrelid::regclass, co.conname), v.attr, v.val
    FROM pg_constraint AS co JOIN rels AS r ON r.oid = co.conrelid
    CROSS JOIN LATERAL (VALUES
        ('definition', pg_get_constraintdef(co.oid)),
        ('comment', obj_description(co.oid, 'pg_constraint'))
    ) AS v (attr, val)
    UNION ALL
    SELECT 'trigger', format('%s %I', t.tgrelid::regclass, t.tgname), v.attr, v.val
    FROM pg_trigger AS t JOIN rels AS r ON r.oid = t.tgrelid
    CROSS JOIN LATERAL (VALUES
        ('definition', pg_get_triggerdef(t.oid)),
        ('enabled', t.tgenabled::text),
        ('comment', obj_description(t.oid, 'pg_trigger'))
    ) AS v (attr, val)
    WHERE NOT t.tgisinternal
    UNION ALL
    SELECT 'policy', format('%s %I', c.oid::regclass, po.policyname), v.attr, v.val
    FROM pg_policies AS po
    JOIN pg_namespace AS ns ON ns.nspname = po.schemaname
    JOIN pg_class AS c ON c.relnamespace = ns.oid AND c.relname = po.tablename
    JOIN rels AS r ON r.oid = c.oid
    CROSS JOIN LATERAL (VALUES
        ('permissive', po.permissive),
        ('roles', po.roles::text),
        ('command', po.cmd),
        ('using', po.qual),
        ('with_check', po.with_check)
    ) AS v (attr, val)
    UNION ALL
    SELECT 'sequence', s.seqrelid::regclass::text, v.attr, v.val
    FROM pg_sequence AS s JOIN rels AS r ON r.oid = s.seqrelid
    CROSS JOIN LATERAL (VALUES
        ('type', s.seqtypid::regtype::text),
        ('start', s.seqstart::text),
        ('increment', s.seqincrement::text),
        ('min', s.seqmin::text),
        ('max', s.seqmax::text),
        ('cache', s.seqcache::text),
        ('cycle', s.seqcycle::text),
        ('owned_by', (SELECT pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid)
                      FROM pg_depend AS d
                      WHERE d.classid = 'pg_class'::regclass AND d.objid = s.seqrelid
                        AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')))
    ) AS v (attr, val)
    UNION ALL
    -- types: tables' row types and their arrays today; domains, enums, composites tomorrow
    SELECT 'type', format_type(t.oid, NULL), v.attr, v.val
    FROM pg_type AS t
    CROSS JOIN LATERAL (VALUES
        ('kind', t.typtype::text),
        ('category', t.typcategory::text),
        ('relation', t.typrelid::regclass::text),
        ('element', t.typelem::regtype::text),
        ('base_type', CASE WHEN t.typtype = 'd' THEN format_type(t.typbasetype, t.typtypmod) END),
        ('not_null', t.typnotnull::text),
        ('default', t.typdefault),
        ('labels', (SELECT string_agg(quote_literal(en.enumlabel), ', ' ORDER BY en.enumsortorder)
                    FROM pg_enum AS en WHERE en.enumtypid = t.oid)),
        ('constraints', (SELECT string_agg(format('%I %s', co.conname, pg_get_constraintdef(co.oid)), ', '
                                           ORDER BY co.conname)
                         FROM pg_constraint AS co WHERE co.contypid = t.oid)),
        ('comment', obj_description(t.oid, 'pg_type')),
        ('acl', t.typacl::text),
        ('owner', pg_get_userbyid(t.typowner)::text)
    ) AS v (attr, val)
    WHERE t.typnamespace = 'ck'::regnamespace
       OR t.oid IN (SELECT m.objid FROM members AS m WHERE m.classid = 'pg_type'::regclass)
    UNION ALL
    SELECT 'schema', n.nspname::text, v.attr, v.val
    FROM pg_namespace AS n
    CROSS JOIN LATERAL (VALUES
        ('acl', n.nspacl::text),
        ('owner', pg_get_userbyid(n.nspowner)::text),
        ('comment', obj_description(n.oid, 'pg_namespace'))
    ) AS v (attr, val)
    WHERE n.nspname = 'ck'
    UNION ALL
    SELECT 'extension', e.extname::text, v.attr, v.val
    FROM pg_extension AS e JOIN ext ON ext.oid = e.oid
    CROSS JOIN LATERAL (VALUES
        ('version', e.extversion),
        ('schema', e.extnamespace::regnamespace::text),
        ('relocatable', e.extrelocatable::text),
        -- pg_extension_config_dump: each table with its condition, in name order (the order of the
        -- calls means nothing to pg_dump, and an upgrade script can only add at the end)
        ('config_tables', (SELECT pg_catalog.string_agg(c::regclass::text || ' ' || pg_catalog.quote_literal(w), ', '
                                                        ORDER BY c::regclass::text)
                           FROM unnest(e.extconfig, e.extcondition) AS x (c, w))),
        ('comment', obj_description(e.oid, 'pg_extension')),
        ('owner', pg_get_userbyid(e.extowner)::text)
    ) AS v (attr, val)
    UNION ALL
    SELECT 'member', pg_describe_object(m.classid, m.objid, m.objsubid), 'type',
           (pg_identify_object(m.classid, m.objid, m.objsubid)).type
    FROM members AS m
    UNION ALL
    -- what the members and the extension itself depend on (schema, language, the objects
    -- a BEGIN ATOMIC body names, a sequence's column, ...)
    SELECT 'depend', pg_describe_object(d.classid, d.objid, d.objsubid), 'deptype ' || d.deptype::text,
           pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid)
    FROM pg_depend AS d
    WHERE d.deptype <> 'e'
      AND ((d.classid, d.objid) IN (SELECT m.classid, m.objid FROM members AS m)
           OR (d.classid = 'pg_extension'::regclass AND d.objid IN (SELECT ext.oid FROM ext)))
    UNION ALL
    -- the privileges pg_dump takes as the extension's own (GRANTs in the scripts)
    SELECT 'initpriv', pg_describe_object(ip.classoid, ip.objoid, ip.objsubid), 'privtype ' || ip.privtype::text,
           ip.initprivs::text
    FROM pg_init_privs AS ip
    WHERE (ip.classoid, ip.objoid) IN (SELECT m.classid, m.objid FROM members AS m)
       OR (ip.classoid = 'pg_namespace'::regclass AND ip.objoid = 'ck'::regnamespace)
)
SELECT concat(cat, ' | ', obj, ' | ', attr, ' = ', coalesce(replace(val, E'\n', '\n'), '<null>'))
FROM rows;
SQL
)

# snapshot DB FILE: the catalog rows of DB, sorted byte-wise (the same order in both databases).
snapshot() {
    sql -d "$1" <<<"$catalog_sql" >"$2.unsorted" || return 1
    LC_ALL=C sort "$2.unsorted" >"$2"
}

# same_rows LABEL CATEGORY_REGEX: the rows of those categories are the same in the upgraded (A)
# and the fresh (B) snapshot; otherwise prints the rows found in only one of them.
same_rows() {
    grep -E "^($2) \|" "$tmp/a.after" >"$tmp/a.$1" || true
    grep -E "^($2) \|" "$tmp/b" >"$tmp/b.$1" || true
    local only_a only_b
    only_a=$(LC_ALL=C comm -23 "$tmp/a.$1" "$tmp/b.$1")
    only_b=$(LC_ALL=C comm -13 "$tmp/a.$1" "$tmp/b.$1")
    [[ -z $only_a && -z $only_b ]] && return 0
    echo "$(LC_ALL=C comm -3 "$tmp/a.$1" "$tmp/b.$1" | wc -l) rows differ: '-' only in the upgraded install ($db_a)," \
        "'+' only in the fresh one ($db_b)"
    { [[ -z $only_a ]] || sed 's/^/- /' <<<"$only_a"; [[ -z $only_b ]] || sed 's/^/+ /' <<<"$only_b"; } |
        LC_ALL=C sort -t'|' -k2,3 -s
    return 1
}
# rows_in FILE CATEGORY: how many rows of that category FILE holds.
rows_in() { grep -c "^$2 |" "$1" || true; }
# objects_in FILE CATEGORY: how many distinct objects of that category FILE holds.
objects_in() { grep "^$2 |" "$1" | awk -F' [|] ' '{ print $2 }' | sort -u | wc -l; }

categories=(function relation column index constraint trigger policy sequence type schema extension member depend initpriv)
# every_category_in FILE...: every category has rows in each FILE (so that no comparison passes
# because both sides printed nothing); otherwise names the empty ones.
every_category_in() {
    local f c bad=0
    for f in "$@"; do
        for c in "${categories[@]}"; do
            if (($(rows_in "$f" "$c") == 0)); then
                echo "no '$c' rows in $(basename "$f")"
                bad=1
            fi
        done
    done
    return $bad
}

dropdb --if-exists --force "$db_a"
dropdb --if-exists --force "$db_b"
createdb "$db_a"
createdb "$db_b"

# Database B first: the fresh install at the default version, the reference for A.
assert "fresh install: CREATE EXTENSION concurrency_kit in $db_b" \
    sql -d "$db_b" -c 'CREATE EXTENSION concurrency_kit'
check "the fresh install is at the control file's default_version ($default)" "$db_b" "
    SELECT extversion = '$default' FROM pg_extension WHERE extname = 'concurrency_kit'"

# Database A under 0.1.0. What the later checks need is kept in tables of A itself (leased:
# ids and tokens of the jobs claimed; dead: the jobs failed into dead letters; ...), so that
# the checks after the update compare with what 0.1.0 handed out.
#   jobs:     6 jobs; 3 claimed with a 1-hour lease (priority 0), 3 ready (priority 1)
#   expiring: 1 job claimed with a 1 ms lease: its lease runs out at once, so that after the
#             update it is claimed again and its 0.1.0 token becomes stale
#   fragile:  max_attempts 1; 2 jobs claimed and failed: both go to the dead letters
#   locks:    namespaces 'first_ns' then 'upgrade_ns' (so that upgrade_ns is not number 1)
#   stock:    sku 42 from 10 to 8 by ck.decrement
setup_old() {
    sql -d "$db_a" <<SQL
\\o /dev/null
CREATE EXTENSION concurrency_kit VERSION '$oldest';
SELECT FROM ck.create_queue('jobs', lease => '1 hour', max_attempts => 5);
SELECT FROM ck.create_queue('expiring', lease => '1 hour', max_attempts => 5);
SELECT FROM ck.create_queue('fragile', lease => '1 hour', max_attempts => 1);
SELECT ck.enqueue('jobs', jsonb_build_object('n', g), priority => CASE WHEN g <= 3 THEN 0 ELSE 1 END)
FROM generate_series(1, 6) AS g;
CREATE TABLE leased AS SELECT id, lease_token FROM ck.claim('jobs', 3, '1 hour');
CREATE TABLE ready AS SELECT id FROM jobs WHERE lease_token IS NULL;
SELECT FROM ck.enqueue('expiring', '{"n": "expiring"}');
CREATE TABLE expired_claim AS SELECT id, lease_token FROM ck.claim('expiring', 1, '1 millisecond');
SELECT ck.enqueue('fragile', jsonb_build_object('n', g)) FROM generate_series(1, 2) AS g;
CREATE TABLE dead AS SELECT id, lease_token, ck.fail('fragile', id, lease_token, 'boom') AS outcome
FROM ck.claim('fragile', 2, '1 hour');
SELECT FROM ck.lock_namespace('first_ns');
CREATE TABLE ns AS SELECT ck.lock_namespace('upgrade_ns') AS number;
CREATE TABLE stock (sku integer PRIMARY KEY, qty integer NOT NULL);
INSERT INTO stock VALUES (42, 10), (43, 5);
CREATE TABLE decremented AS SELECT ck.decrement('stock', 'qty', 42, 2) AS qty;
-- The SQLSTATE a statement raises, or NULL when it raises none (the user's helper, not the extension's).
CREATE FUNCTION sqlstate_of(statement text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN
    EXECUTE statement;
    RETURN NULL;
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END
\$\$;
SQL
}
needed "old install: CREATE EXTENSION concurrency_kit VERSION '$oldest' in $db_a, queues, locks and stock used under it" \
    setup_old
check "$db_a is at $oldest before the update" "$db_a" "
    SELECT extversion = '$oldest' FROM pg_extension WHERE extname = 'concurrency_kit'"
check "under $oldest: 3 jobs leased, 3 ready, 1 leased for 1 ms, and ck.fail returned 'dead' for both jobs of the max_attempts 1 queue (now dead letters)" "$db_a" "
    SELECT (SELECT count(*) FROM leased) = 3 AND (SELECT count(*) FROM ready) = 3
       AND (SELECT count(*) FROM expired_claim) = 1
       AND (SELECT count(*) FILTER (WHERE outcome = 'dead') FROM dead) = 2
       AND (SELECT count(*) FROM fragile_dead WHERE id IN (SELECT id FROM dead)) = 2
       AND (SELECT count(*) FROM fragile) = 0"
# The update under test removes SET clauses; were there none, the no-proconfig check below
# would pass without the update doing anything.
check "under $oldest: $(value "$db_a" "SELECT count(*) FROM pg_proc WHERE pronamespace = 'ck'::regnamespace AND proconfig IS NOT NULL") functions carry a SET clause" "$db_a" "
    SELECT count(*) > 0 FROM pg_proc WHERE pronamespace = 'ck'::regnamespace AND proconfig IS NOT NULL"

snapshots_before() { snapshot "$db_a" "$tmp/a.before" && snapshot "$db_b" "$tmp/b"; }
needed "the extension's catalog rows print in $db_a ($oldest) and $db_b" snapshots_before

# The versions the update passes through, as PostgreSQL itself chains the scripts.
path=$(value "$db_a" "SELECT path FROM pg_extension_update_paths('concurrency_kit')
                      WHERE source = '$oldest' AND target = '$default'")
assert "an update path leads from $oldest to $default: ${path:-none}" test -n "$path"
assert "ALTER EXTENSION concurrency_kit UPDATE (to the default version) in $db_a" \
    sql -d "$db_a" -c 'ALTER EXTENSION concurrency_kit UPDATE'
check "$db_a is at the control file's default_version ($default) after the update" "$db_a" "
    SELECT extversion = '$default' FROM pg_extension WHERE extname = 'concurrency_kit'"
check "no function in schema ck has a proconfig (SET clause) after the update" "$db_a" "
    SELECT count(*) = 0 FROM pg_proc WHERE pronamespace = 'ck'::regnamespace AND proconfig IS NOT NULL"

# Upgraded against fresh, from the catalog.
needed "the extension's catalog rows print in $db_a after the update" snapshot "$db_a" "$tmp/a.after"
assert "the comparison is not vacuous: every category has rows, in both databases ($(
    for c in "${categories[@]}"; do printf '%s %s, ' "$c" "$(rows_in "$tmp/b" "$c")"; done | sed 's/, $//'))" \
    every_category_in "$tmp/a.after" "$tmp/b"
fa=$(objects_in "$tmp/a.after" function)
fb=$(objects_in "$tmp/b" function)
assert "functions compared: $fa upgraded, $fb fresh (more than 40 each)" test "$fa" -gt 40 -a "$fb" -gt 40
# The comparison can see a difference: before the update, A (0.1.0) differs from B.
differ() { ! cmp -s "$1" "$2"; }
assert "the same comparison tells $oldest from a fresh $default ($(LC_ALL=C comm -3 "$tmp/a.before" "$tmp/b" | wc -l) differing rows before the update)" \
    differ "$tmp/a.before" "$tmp/b"
assert "upgraded = fresh: functions and procedures (signature, result, arguments and defaults, kind, volatility, parallel, strict, security, config, language, body, comment, ACL; $(rows_in "$tmp/b" function) rows)" \
    same_rows functions function
assert "upgraded = fresh: tables, sequences, views, types (columns, defaults, indexes, constraints, triggers, policies, ACLs, options, comments, sequence parameters; $(
    grep -cE '^(relation|column|index|constraint|trigger|policy|sequence|type) \|' "$tmp/b") rows)" \
    same_rows relations 'relation|column|index|constraint|trigger|policy|sequence|type'
assert "upgraded = fresh: extension members, their dependencies, schema ck and its ACL, the extension's config tables and initial privileges ($(
    grep -cE '^(schema|extension|member|depend|initpriv) \|' "$tmp/b") rows)" \
    same_rows extension 'schema|extension|member|depend|initpriv'

# The state made under 0.1.0, under the new version.
check "every queue made under $oldest carries the claim_wait wake-up trigger ck_ready after the update" "$db_a" "
    SELECT bool_and(EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = q.queue AND t.tgname = 'ck_ready'
                            AND t.tgfoid = 'ck_internal.queue_ready()'::regprocedure)) AND count(*) >= 3
    FROM ck.queues AS q"
check "every queue made under $oldest has ck_ready reading the transition table and ck_changed after the update (0.2.2)" "$db_a" "
    SELECT bool_and(EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = q.queue AND t.tgname = 'ck_ready'
                            AND t.tgnewtable IS NOT NULL)
                    AND EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = q.queue AND t.tgname = 'ck_changed'
                                AND t.tgfoid = 'ck_internal.queue_changed()'::regprocedure)) AND count(*) >= 3
    FROM ck.queues AS q"
check "ck.queue_stats on a queue made under $oldest: 3 ready, 3 running, none scheduled, expired or dead" "$db_a" "
    SELECT (ready, scheduled, running, expired, dead) = (3, 0, 3, 0, 0) FROM ck.queue_stats('jobs')"
check "the 3 jobs leased under $oldest complete with their old lease tokens (ck.complete true for each)" "$db_a" "
    SELECT count(*) = 3 AND bool_and(ck.complete('jobs', id, lease_token)) FROM leased"
# R9: the 0.x acknowledgements that returned a failure value for a lost lease raise CK005 now
# (a 0.x caller that did not test the value cannot go on as if the job were done); the 0.x
# meaning is the try_ form's.
check "those old tokens are spent: completing again raises CK005 (0.x: false), ck.try_complete returns false" "$db_a" "
    SELECT count(*) = 3 AND bool_and(sqlstate_of(format('SELECT ck.complete(%L, %s, %s)', 'jobs', id, lease_token)) = 'CK005')
       AND NOT bool_or(ck.try_complete('jobs', id, lease_token)) FROM leased"
check "ck.fail with a spent token raises CK005 (0.x: 'lost'), ck.try_fail returns NULL" "$db_a" "
    SELECT count(*) = 3 AND bool_and(sqlstate_of(format('SELECT ck.fail(%L, %s, %s)', 'jobs', id, lease_token)) = 'CK005')
       AND bool_and(ck.try_fail('jobs', id, lease_token) IS NULL) FROM leased"
check "ck.extend_lease with a spent token raises CK005 (0.x: NULL), ck.try_extend_lease returns NULL" "$db_a" "
    SELECT count(*) = 3 AND bool_and(sqlstate_of(format('SELECT ck.extend_lease(%L, %s, %s, %L)', 'jobs', id, lease_token, '1 minute')) = 'CK005')
       AND bool_and(ck.try_extend_lease('jobs', id, lease_token, '1 minute') IS NULL) FROM leased"
check "ck.complete_many with spent tokens raises CK005 (0.x: the ids still held, none), ck.try_complete_many returns none" "$db_a" "
    SELECT sqlstate_of(format('SELECT ck.complete_many(%L, %L, %L)', 'jobs', array_agg(id), array_agg(lease_token))) = 'CK005'
       AND NOT EXISTS (SELECT FROM ck.try_complete_many('jobs', array_agg(id), array_agg(lease_token))) FROM leased"
check "a 0.x ck.enqueue_unique(queue, key) without a payload fails with 42883 (1.0: the payload is required)" "$db_a" "
    SELECT sqlstate_of(\$\$SELECT ck.enqueue_unique('jobs', '{\"to\": \"z\"}')\$\$) = '42883'"
check "a 0.x ck.claim_wait with all four arguments still claims (1.0 adds defaults only)" "$db_a" "
    SELECT count(*) = 0 FROM ck.claim_wait('fragile', 1, NULL, '10 ms')"
check "claim's result column is attempts (0.x: attempt): a 0.x reader of attempt gets 42703" "$db_a" "
    SELECT sqlstate_of(\$\$SELECT attempt FROM ck.claim('jobs')\$\$) = '42703'"
# The job whose 1 ms lease ran out under 0.1.0 is claimed again now: attempt 2, a new token.
sql -d "$db_a" -c "CREATE TABLE reclaimed AS SELECT id, lease_token, attempts FROM ck.claim('expiring', 1, '1 hour')" || true
check "a job whose $oldest lease expired is claimed again: same id, attempt 2, a new token" "$db_a" "
    SELECT r.id = e.id AND r.attempts = 2 AND r.lease_token > e.lease_token
    FROM reclaimed AS r, expired_claim AS e"
check "its stale $oldest token is refused: ck.try_complete false (ck.complete raises CK005)" "$db_a" "
    SELECT NOT ck.try_complete('expiring', id, lease_token)
       AND sqlstate_of(format('SELECT ck.complete(%L, %s, %s)', 'expiring', id, lease_token)) = 'CK005' FROM expired_claim"
check "the new holder's token completes it: ck.complete true" "$db_a" "
    SELECT ck.complete('expiring', id, lease_token) FROM reclaimed"
check "ck.queue_stats sees the 2 dead jobs of $oldest" "$db_a" "
    SELECT dead = 2 FROM ck.queue_stats('fragile')"
check "the dead jobs of $oldest revive (ck.retry_dead true for each)" "$db_a" "
    SELECT count(*) = 2 AND bool_and(ck.retry_dead('fragile', id)) FROM dead"
check "the revived jobs are claimable (ck.claim returns both, attempt 1) and complete" "$db_a" "
    WITH c AS (SELECT * FROM ck.claim('fragile', 10, '1 hour'))
    SELECT array_agg(c.id ORDER BY c.id) = (SELECT array_agg(id ORDER BY id) FROM dead)
       AND bool_and(c.attempts = 1) AND bool_and(ck.complete('fragile', c.id, c.lease_token))
    FROM c"
sql -d "$db_a" -c "CREATE TABLE new_job AS SELECT ck.enqueue('jobs', '{\"n\": \"new\"}') AS id" || true
check "a job enqueued now is claimed, with the 3 ready ones left from $oldest, and they complete" "$db_a" "
    WITH c AS (SELECT * FROM ck.claim('jobs', 10, '1 hour'))
    SELECT array_agg(c.id ORDER BY c.id) = (SELECT array_agg(id ORDER BY id) FROM (
               SELECT id FROM ready UNION ALL SELECT id FROM new_job) AS expected)
       AND bool_and(ck.complete('jobs', c.id, c.lease_token))
    FROM c"
# Preloaded or not (0.4.0: the shared state is made by the first use of a queue).
check "claims of a queue made under $oldest start at its frontier (ck.claim_frontier knows priority 0, ck.claim_path says frontier)" "$db_a" "
    SELECT EXISTS (SELECT FROM ck_internal.claim_frontier('jobs') WHERE priority = 0) AND (ck.claim_path('jobs')).path = 'frontier'"
sql -d "$db_a" -c "CREATE TABLE unique_job AS SELECT ck.enqueue('jobs', unique_key => 'upgrade') AS id" || true
check "a queue made under $oldest takes unique keys after the update (0.3.0): a duplicate returns the first job" "$db_a" "
    SELECT e.id = u.id AND NOT e.inserted AND (SELECT count(*) FROM jobs WHERE unique_key = 'upgrade') = 1
    FROM unique_job AS u, ck.enqueue_unique('jobs', 'upgrade', '{}') AS e"
check "and ck.cancel says 'cancelled' for that waiting job" "$db_a" "
    SELECT ck.cancel('jobs', id) = 'cancelled' FROM unique_job"
check "which is now a dead letter with the reason cancelled, and purged" "$db_a" "
    SELECT (SELECT last_error FROM jobs_dead AS d WHERE d.id = u.id) = 'cancelled'
       AND NOT EXISTS (SELECT FROM jobs AS j WHERE j.id = u.id)
       AND ck.purge_dead('jobs', '0') = 1
    FROM unique_job AS u"
sql -d "$db_a" -c "CREATE TABLE window_job AS SELECT ck.enqueue('jobs', unique_key => 'upgrade-window', unique_for => '1 hour') AS id" \
    -c "SELECT ck.cancel('jobs', id) FROM window_job" -c "SELECT ck.purge_dead('jobs', '0')" >/dev/null || true
check "a key with a window (unique_for) stays taken in a queue made under $oldest after its job is gone" "$db_a" "
    SELECT ck.enqueue('jobs', unique_key => 'upgrade-window', unique_for => '1 hour') = id
       AND NOT EXISTS (SELECT FROM jobs WHERE unique_key = 'upgrade-window')
    FROM window_job"
sql -d "$db_a" -c "SELECT ck.set_concurrency_limit('jobs', 'upgrade-key', 1)" \
    -c "CREATE TABLE keyed AS SELECT ck.enqueue('jobs', concurrency_key => 'upgrade-key') AS id FROM generate_series(1, 2)" >/dev/null || true
check "a queue made under $oldest takes concurrency limits (0.3.0): of two jobs of a key limited to 1, one waits parked" "$db_a" "
    SELECT count(*) FILTER (WHERE parked_run_at IS NOT NULL) = 1 AND count(*) = 2 FROM jobs WHERE concurrency_key = 'upgrade-key'"
sql -d "$db_a" -c "SELECT count(ck.complete('jobs', id, lease_token)) FROM ck.claim('jobs', 10)" >/dev/null || true
check "and completing the first hands its slot to the second (ck_left on the updated queue)" "$db_a" "
    SELECT count(*) = 1 AND bool_and(parked_run_at IS NULL) FROM jobs WHERE concurrency_key = 'upgrade-key'"
sql -d "$db_a" -c "SELECT count(ck.complete('jobs', id, lease_token)) FROM ck.claim('jobs', 10)" \
    -c "SELECT ck.set_concurrency_limit('jobs', 'upgrade-key', NULL)" >/dev/null || true
sql -d "$db_a" -c "CREATE TABLE first_step AS SELECT ck.enqueue('jobs', '{\"step\": 1}') AS id" \
    -c "CREATE TABLE second_step AS SELECT ck.enqueue('jobs', '{\"step\": 2}', after => ARRAY[id]) AS id FROM first_step" >/dev/null || true
check "a queue made under $oldest takes dependencies after the update (0.3.1): the second step waits for the first" "$db_a" "
    SELECT (SELECT array_agg(c.id) FROM ck.claim('jobs', 10) AS c) = (SELECT ARRAY[id] FROM first_step)
       AND (SELECT waiting_for FROM jobs WHERE id = (SELECT id FROM second_step)) = 1"
sql -d "$db_a" -c "SELECT ck.complete('jobs', j.id, j.lease_token) FROM jobs AS j JOIN first_step USING (id)" >/dev/null || true
check "and is claimed once the first completed (ck_dependency_left on the updated queue)" "$db_a" "
    WITH c AS (SELECT * FROM ck.claim('jobs', 10))
    SELECT array_agg(c.id) = (SELECT ARRAY[id] FROM second_step) AND bool_and(ck.complete('jobs', c.id, c.lease_token)) FROM c"
sql -d "$db_a" -c "UPDATE ck.queues SET timeout = '1 minute' WHERE queue = 'jobs'::regclass" \
    -c "SELECT ck.enqueue('jobs')" -c "CREATE TABLE timed AS SELECT * FROM ck.claim('jobs', 1, '1 hour')" >/dev/null || true
check "a queue made under $oldest takes a job timeout after the update (1.1.0): the lease capped at its deadline" "$db_a" "
    SELECT t.lease_until = j.timeout_at AND ck.extend_lease('jobs', t.id, t.lease_token, '1 day') = j.timeout_at
       AND ck.complete('jobs', t.id, t.lease_token) FROM timed AS t JOIN jobs AS j USING (id)"
check "the queues are empty now: ck.queue_stats all zero" "$db_a" "
    SELECT bool_and((s.ready, s.scheduled, s.running, s.expired, s.dead) = (0, 0, 0, 0, 0))
    FROM unnest(ARRAY['jobs', 'expiring', 'fragile']::regclass[]) AS q, ck.queue_stats(q) AS s"
check "ck.lock_namespace('upgrade_ns') returns the number it got under $oldest ($(value "$db_a" "SELECT number FROM ns"))" "$db_a" "
    SELECT ck.lock_namespace('upgrade_ns') = number FROM ns"
check "a namespace registered now gets a number of its own" "$db_a" "
    SELECT ck.lock_namespace('after_upgrade') NOT IN (SELECT id FROM ck.lock_namespaces WHERE name <> 'after_upgrade')"
check "ck.decrement (1.0: key before column) works on the stock decremented under $oldest (10 - 2 - 3 = 5)" "$db_a" "
    SELECT (SELECT qty FROM decremented) = 8 AND ck.decrement('stock', 42, 'qty', 3) = 5"
check "ck.decrement raises CK001 when asked for more than the stock, and changes nothing" "$db_a" "
    SELECT sqlstate_of(\$\$SELECT ck.decrement('stock', 42, 'qty', 100)\$\$) = 'CK001'
       AND (SELECT qty FROM stock WHERE sku = 42) = 5"
check "ck.decrement raises CK004 for a key no row has" "$db_a" "
    SELECT sqlstate_of(\$\$SELECT ck.decrement('stock', 4242, 'qty', 1)\$\$) = 'CK004'"
check "the $oldest call ck.decrement(table, column, key) fails loudly now (42883)" "$db_a" "
    SELECT sqlstate_of(\$\$SELECT ck.decrement('stock', 'qty', 42, 1)\$\$) = '42883'
       AND (SELECT qty FROM stock WHERE sku = 42) = 5"
check "ck.try_update_if_version on the stock of $oldest (0.3.1), qty as the version: 5 -> 6, then stale: NULL; ck.update_if_version: CK006 (retry)" "$db_a" "
    SELECT ck.try_update_if_version('stock', 42, 5, '{}', 'qty') = 6
       AND ck.try_update_if_version('stock', 42, 5, '{}', 'qty') IS NULL
       AND sqlstate_of(\$\$SELECT ck.update_if_version('stock', 42, 5, '{}', 'qty')\$\$) = 'CK006'
       AND ck.sqlstate_action('CK006') = 'retry'"
# (in autocommit: its 25P01 warning, tested in sql/lock_rows.sql, is silenced here)
check "ck.lock_rows locks the one row of two keys, and ck.add_version_guard guards that stock (0.3.1)" "$db_a" "
    SET client_min_messages = error;
    SELECT ck.lock_rows('stock', ARRAY[4242, 42]) = 1 AND ck.add_version_guard('stock', 'qty') LIKE 'CREATE OR REPLACE TRIGGER %'"
check "a plain UPDATE of that stock now bumps its qty as a version: 6 -> 7" "$db_a" "
    WITH u AS (UPDATE stock SET sku = sku WHERE sku = 42 RETURNING qty) SELECT (SELECT qty FROM u) = 7"

# A second update finds nothing to do: PostgreSQL says so in a NOTICE and succeeds.
update_again() {
    local out status=0
    out=$(psql -X -q -d "$db_a" -v ON_ERROR_STOP=1 -c 'SET client_min_messages = notice' \
        -c 'ALTER EXTENSION concurrency_kit UPDATE' 2>&1) || status=$?
    if ((status != 0)) || ! grep -q 'already installed' <<<"$out"; then
        echo "exit $status: $out"
        return 1
    fi
}
assert "a second ALTER EXTENSION UPDATE succeeds and says the version is already installed" update_again
check "and leaves $db_a at $default" "$db_a" "
    SELECT extversion = '$default' FROM pg_extension WHERE extname = 'concurrency_kit'"

# Every released version still installs, the ones without a full script of their own through the chain.
installs_at() {
    sql -d "$db_b" -c 'DROP EXTENSION concurrency_kit CASCADE' -c "CREATE EXTENSION concurrency_kit VERSION '$1'" &&
        test "$(value "$db_b" "SELECT extversion FROM pg_extension WHERE extname = 'concurrency_kit'")" = "$1"
}
for version in ${path//--/ }; do
    assert "CREATE EXTENSION concurrency_kit VERSION '$version' installs (script: $(
        [[ -f sql/concurrency_kit--$version.sql ]] && echo "its own" || echo "the chain from $oldest"))" \
        installs_at "$version"
done

# A column named unique_key that ck did not make (no partial unique index on it) is the user's:
# the update to 0.3.0 refuses it (42701) and leaves the extension at 0.2.2.
refuses_foreign_unique_key() {
    local out status=0
    sql -d "$db_b" -c 'DROP EXTENSION concurrency_kit CASCADE' -c "CREATE EXTENSION concurrency_kit VERSION '0.2.2'" \
        -c "SELECT FROM ck.create_queue('theirs')" -c 'DROP INDEX theirs_unique_key_idx' || return 1
    out=$(psql -X -q -d "$db_b" -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -c 'ALTER EXTENSION concurrency_kit UPDATE' 2>&1) ||
        status=$?
    if ((status == 0)) || ! grep -q '42701' <<<"$out" ||
        [[ $(value "$db_b" "SELECT extversion FROM pg_extension WHERE extname = 'concurrency_kit'") != 0.2.2 ]]; then
        echo "exit $status: $out"
        return 1
    fi
}
assert "the update to 0.3.0 refuses a queue whose column unique_key is not ck's (42701) and changes nothing" \
    refuses_foreign_unique_key

echo "1..$n"
