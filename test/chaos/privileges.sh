#!/usr/bin/env bash
# Privileges (issue #11): every ck function runs with the caller's rights and reaches exactly
# what the caller could reach with plain SQL.
#
#   bash test/chaos/privileges.sh full|short
#
# - the matrix of privileges_matrix.py: for every function, a role with and without each
#   right its plain SQL needs (table rights, column rights, USAGE on the table's schema, the
#   namespace registry ck.lock_namespaces, the sequence ck.lease_tokens, USAGE on schema ck,
#   ownership): allowed exactly when the plain SQL is, 42501 otherwise, nothing changed when
#   refused;
# - ck.queues (row-level security): a role cannot change, delete or register another
#   owner's queue settings; the owner (and a member of the owner role) can;
# - the registry: with INSERT on ck.lock_namespaces revoked from PUBLIC nobody but its owner
#   registers a namespace; a name cached by a backend is not a way around a revoked SELECT;
# - SECURITY DEFINER appears nowhere: prosecdef is false for every function of the extension.
# full runs the matrix twice (the second time every cell in one session that switches roles,
# so that plans and names cached under one role meet the next); short runs it once.
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a throwaway cluster (test/cluster.sh); makes and
# drops its own database and roles. Prints TAP; report lines start with "#".
# needs: python3   (test/run.sh skips this suite where one is missing)
set -euo pipefail

mode=${1:-}
case $mode in
    full | short) ;;
    *) echo "usage: $0 full|short" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
su=${PGUSER:-postgres}
db=ck_priv
owner=ck_priv_owner
user=ck_priv_user
other=ck_priv_other
work=$(mktemp -d)

drop_all() {
    dropdb --if-exists --force "$db" >/dev/null 2>&1 || true
    psql -X -q -d postgres -c "DROP ROLE IF EXISTS $user" -c "DROP ROLE IF EXISTS $other" \
        -c "DROP ROLE IF EXISTS $owner" >/dev/null 2>&1 || true
}
cleanup() {
    drop_all
    rm -rf "$work"
}
trap cleanup EXIT

. "$here/tap.sh"
su_sql() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
# as ROLE SQL...: the SQLSTATE of the last statement (00000 when none failed) and its output, on one line.
as() {
    local role=$1
    shift
    psql -X -q -At -d "$db" -U "$role" -v VERBOSITY=sqlstate -c '\set VERBOSITY sqlstate' \
        -c '\set LAST_ERROR_SQLSTATE 00000' "${@/#/-c}" -c '\echo @@ :LAST_ERROR_SQLSTATE' 2>/dev/null |
        awk '/^@@ / { code = $2; next } { out = out (out == "" ? "" : ";") $0 } END { print code, out }'
}

t_start=$SECONDS
drop_all
{
    psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE ROLE $owner LOGIN" -c "CREATE ROLE $user LOGIN" \
        -c "CREATE ROLE $other LOGIN" &&
        createdb "$db" &&
        su_sql -v owner="$owner" -v user="$user" -v other="$other" -f "$here/privileges_schema.sql"
} >"$work/setup.log" 2>&1 && ok "set-up: database $db, roles $owner (app), $user, $other" || {
    not_ok "set-up"
    sed 's/^/# /' "$work/setup.log"
    echo "1..$n"
    exit 1
}

# ---------------------------------------------------------------------------------------
# The matrix.
run_matrix() {   # run_matrix NAME [single]: runs the matrix, prints its TAP lines
    local name=$1 t0=$SECONDS
    python3 "$here/privileges_matrix.py" script "$su" "$owner" "$user" "${2:-a}" >"$work/matrix.sql"
    if [[ ${2:-} == single ]]; then
        # one session: SET ROLE instead of a new connection per statement
        sed -i -e "s/^\\\\c - $user\$/SET ROLE $user;/" -e "s/^\\\\c - $su\$/RESET ROLE;/" "$work/matrix.sql"
    fi
    psql -X -q -d "$db" -v ON_ERROR_STOP=0 -f "$work/matrix.sql" >"$work/matrix_$name.out" 2>"$work/matrix_$name.err" || true
    while IFS= read -r line; do
        case $line in
            "ok - "*) ok "$name: ${line#ok - }" ;;
            "not ok - "*) not_ok "$name: ${line#not ok - }" ;;
            *) echo "$line" ;;
        esac
    done < <(python3 "$here/privileges_matrix.py" judge "$work/matrix_$name.out")
    echo "# matrix ($name): $((SECONDS - t0)) s"
}
run_matrix matrix
[[ $mode == short ]] || run_matrix "matrix, one session" single

# ---------------------------------------------------------------------------------------
# ck.queues: row-level security keeps every owner's settings to that owner.
su_sql -c "GRANT USAGE ON SCHEMA app TO $user, $other" -c "GRANT SELECT, UPDATE, DELETE ON app.jobs TO $user"
before=$(su_sql -c "SELECT lease || '/' || max_attempts FROM ck.queues WHERE queue = 'app.jobs'::regclass")
got=$(as "$user" "UPDATE ck.queues SET lease = '1 hour', max_attempts = 1 WHERE queue = 'app.jobs'::regclass")
after=$(su_sql -c "SELECT lease || '/' || max_attempts FROM ck.queues WHERE queue = 'app.jobs'::regclass")
check "ck.queues: another role's UPDATE of the owner's queue settings changes nothing ($got; $before -> $after)" \
    test "$before" = "$after"
got=$(as "$user" "DELETE FROM ck.queues WHERE queue = 'app.jobs'::regclass")
check "ck.queues: another role's DELETE of the owner's queue row changes nothing ($got)" \
    test "$(su_sql -c "SELECT count(*) FROM ck.queues WHERE queue = 'app.jobs'::regclass")" = 1
got=$(as "$user" "INSERT INTO ck.queues (queue, dead_letters, lease, max_attempts, notify) VALUES ('app.stock', 'app.stock', '1 second', 1, false)")
check "ck.queues: registering another owner's table as a queue is refused with 42501 ($got)" test "${got%% *}" = 42501
got=$(as "$other" "UPDATE ck.queues SET lease = '1 minute' WHERE queue = 'oth.theirs'::regclass" \
         "SELECT lease FROM ck.queues WHERE queue = 'oth.theirs'::regclass")
check "ck.queues: the owner changes its own queue's settings ($got)" test "$got" = "00000 00:01:00"
su_sql -c "GRANT $other TO $user"
got=$(as "$user" "UPDATE ck.queues SET max_attempts = 7 WHERE queue = 'oth.theirs'::regclass" \
         "SELECT max_attempts FROM ck.queues WHERE queue = 'oth.theirs'::regclass")
check "ck.queues: a member of the owner role may change them too ($got)" test "$got" = "00000 7"
su_sql -c "REVOKE $other FROM $user"
got=$(as "$user" "SELECT ck.create_queue('usr.mine')")
check "ck.queues: a role makes a queue in its own schema ($got)" test "${got%% *}" = 00000
theirs=$(su_sql -c "SELECT 'oth.theirs'::regclass::oid")
got=$(as "$user" "UPDATE ck.queues SET queue = 'usr.mine'::regclass, dead_letters = 'usr.mine_dead'::regclass
                  WHERE queue = $theirs::regclass")
check "ck.queues: another owner's row cannot be taken over ($got)" \
    test "$(su_sql -c "SELECT count(*) FROM ck.queues WHERE queue = 'oth.theirs'::regclass")" = 1
got=$(as "$other" "UPDATE ck.queues SET lease = '1 hour' WHERE queue = 'usr.mine'::regclass")
check "ck.queues: ... whose settings the other owner cannot change" \
    test "$(su_sql -c "SELECT lease FROM ck.queues WHERE queue = 'usr.mine'::regclass")" = "00:00:30"
mine=$(su_sql -c "SELECT 'usr.mine'::regclass::oid")
got=$(as "$other" "SELECT ck.drop_queue($mine::regclass)")
check "ck.drop_queue of another owner's queue is refused with 42501 ($got)" test "${got%% *}" = 42501
check "... and the queue is still there" \
    test "$(su_sql -c "SELECT count(*) FROM ck.queues WHERE queue::text = 'usr.mine'")" = 1

# ---------------------------------------------------------------------------------------
# ck.paused_keys (1.1.0): anyone reads it, only the queue's owner writes it (row-level security),
# whatever a worker's rights on the queue; a worker's claim may only lock a row (FOR KEY SHARE).
su_sql -c "GRANT SELECT, UPDATE, DELETE ON app.pk TO $user" -c "DELETE FROM app.pk" \
    -c "SELECT ck.enqueue('app.pk', concurrency_key => 'priv')" -c "SELECT ck.pause_queue('app.pk', 'priv')" >/dev/null
paused() { su_sql -c "SELECT string_agg(concurrency_key || '@' || paused_at, ',') FROM ck.paused_keys WHERE queue = 'app.pk'::regclass"; }
before=$(paused)
got=$(as "$user" "SELECT count(*) FROM ck.paused_keys WHERE queue = 'app.pk'::regclass")
check "ck.paused_keys: a worker reads the queue's paused keys ($got)" test "$got" = "00000 1"
got=$(as "$user" "DELETE FROM ck.paused_keys WHERE queue = 'app.pk'::regclass")
check "ck.paused_keys: a worker's DELETE resumes nothing ($got; $before -> $(paused))" test "$(paused)" = "$before"
got=$(as "$user" "UPDATE ck.paused_keys SET concurrency_key = 'other' WHERE queue = 'app.pk'::regclass")
check "ck.paused_keys: a worker's UPDATE is refused with 42501 ($got)" test "${got%% *}" = 42501 -a "$(paused)" = "$before"
got=$(as "$user" "INSERT INTO ck.paused_keys (queue, concurrency_key) VALUES ('app.pk'::regclass, 'other')")
check "ck.paused_keys: a worker's INSERT (a pause without its parking) is refused with 42501 ($got)" \
    test "${got%% *}" = 42501 -a "$(paused)" = "$before"
got=$(as "$user" "SELECT ck.resume_queue('app.pk', 'priv')")
check "ck.paused_keys: ... and so is a worker's ck.resume_queue of the key, with 42501 ($got)" \
    test "${got%% *}" = 42501 -a "$(paused)" = "$before"
got=$(as "$owner" "SELECT ck.resume_queue('app.pk', 'priv')")
check "ck.paused_keys: the owner resumes the key ($got)" test "$got" = "00000 t" -a -z "$(paused)"
su_sql -c "REVOKE ALL ON app.pk FROM $user"

# ---------------------------------------------------------------------------------------
# Without USAGE on schema ck nothing of the extension can be called.
su_sql -c "REVOKE USAGE ON SCHEMA ck FROM PUBLIC"
got=$(as "$user" "SELECT ck.sqlstate_action('40001')")
check "without USAGE on schema ck (revoked from PUBLIC) a call is refused with 42501 ($got)" test "${got%% *}" = 42501
su_sql -c "GRANT USAGE ON SCHEMA ck TO PUBLIC"

# ---------------------------------------------------------------------------------------
# The namespace registry.
su_sql -c "REVOKE INSERT ON ck.lock_namespaces FROM PUBLIC"
rows=$(su_sql -c "SELECT count(*) FROM ck.lock_namespaces")
got=$(as "$user" "SELECT ck.lock_namespace('brand-new')")
check "registry: with INSERT revoked from PUBLIC, ck.lock_namespace of a new name is refused with 42501 ($got)" \
    test "${got%% *}" = 42501
got=$(as "$user" "SELECT ck.xact_lock('brand-new', 1)")
check "registry: a lock call by a new name never registers it: 42704, whatever the rights ($got)" \
    test "${got%% *}" = 42704
got=$(as "$user" "SELECT ck.try_xact_lock('brand-new', 1)")
check "registry: ... and ck.try_xact_lock ($got)" test "${got%% *}" = 42704
got=$(as "$user" "SELECT ck.session_lock('brand-new', 1)")
check "registry: ... and ck.session_lock ($got)" test "${got%% *}" = 42704
check "registry: ... and nothing was registered" test "$(su_sql -c "SELECT count(*) FROM ck.lock_namespaces")" = "$rows"
got=$(as "$user" "SELECT ck.lock_namespace('registered') > 0")
check "registry: a registered name still resolves ($got)" test "$got" = "00000 t"
got=$(as "$su" "SELECT ck.lock_namespace('brand-new') > 0")
check "registry: its owner still registers ($got)" test "$got" = "00000 t"
su_sql -c "GRANT INSERT ON ck.lock_namespaces TO PUBLIC"
# One backend: the name is cached under a role that may read the registry, then SELECT is
# revoked; plain SQL in that backend is refused from then on, and so must the call be.
got=$(psql -X -q -At -d "$db" -v VERBOSITY=sqlstate -f - 2>/dev/null <<EOF
\set VERBOSITY sqlstate
SET ROLE $other;
SELECT ck.lock_namespace('registered') > 0;
RESET ROLE;
REVOKE SELECT ON ck.lock_namespaces FROM PUBLIC;
SET ROLE $user;
\set LAST_ERROR_SQLSTATE 00000
SELECT id FROM ck.lock_namespaces WHERE name = 'registered';
\echo plain :LAST_ERROR_SQLSTATE
\set LAST_ERROR_SQLSTATE 00000
SELECT ck.lock_namespace('registered');
\echo ck :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT SELECT ON ck.lock_namespaces TO PUBLIC;
EOF
)
got=$(grep -E '^(plain|ck) ' <<<"$got" | tr '\n' ' ')
check "registry: a name cached by the backend under another role does not bypass a revoked SELECT ($got)" \
    test "$got" = "plain 42501 ck 42501 "

# ---------------------------------------------------------------------------------------
# No SECURITY DEFINER anywhere.
read -r funcs secdef < <(su_sql -F ' ' -c "SELECT count(*), count(*) FILTER (WHERE p.prosecdef)
    FROM pg_depend AS d JOIN pg_proc AS p ON p.oid = d.objid AND d.classid = 'pg_proc'::regclass
    WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
      AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'concurrency_kit')")
check "SECURITY DEFINER: none of the extension's $funcs functions is (prosecdef true: $secdef)" test "$secdef" = 0
check "SECURITY DEFINER: no install or upgrade script of the repository contains it" \
    bash -c "! grep -il 'security[[:space:]]\\+definer' '$here'/../../sql/concurrency_kit--*.sql"

echo "# privileges.sh $mode: $((SECONDS - t_start)) s; $n checks, $failed failed"
echo "1..$n"
((failed == 0))
