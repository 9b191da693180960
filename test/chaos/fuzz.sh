#!/usr/bin/env bash
# Fuzzing (issue #11): sqlsmith and a generator of random ck calls against a database with
# the extension and sample tables, then a hand-written list of hostile calls. Zero backend
# crashes, no internal error (XX000) from a ck function, the server still up.
#
#   bash test/chaos/fuzz.sh full|short
#
# full (make chaos): sqlsmith 10,000 queries over every function plus 10,000 focused on ck
# (its catalog query sees only ck's functions and the aggregates), 20,000 generated calls,
# the hostile list. short (make test): 1,000 + 1,000 queries, 2,000 calls, the hostile list.
# CK_FUZZ_SEED overrides the fixed seed. Needs PGHOST/PGPORT/PGUSER (a superuser) of a
# throwaway cluster (test/cluster.sh) and CK_SERVER_LOG; makes and drops its own databases
# and roles. Prints TAP; report lines start with "#".
# needs: python3   (test/run.sh skips this suite where one is missing)
set -euo pipefail

mode=${1:-}
case $mode in
    full) smith_all=10000 smith_ck=10000 generated=20000 ;;
    short) smith_all=1000 smith_ck=1000 generated=2000 ;;
    *) echo "usage: $0 full|short" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
seed=${CK_FUZZ_SEED:-20261130}
: "${CK_SERVER_LOG:?run under test/cluster.sh env}"

# sqlsmith from Debian; as root it is installed when missing (as test/run.sh does for its packages).
ensure_sqlsmith() {
    command -v sqlsmith >/dev/null && return 0
    if [[ $EUID -ne 0 ]]; then
        echo "# sqlsmith is missing: install it as root (apt-get install sqlsmith)"
        return 1
    fi
    echo "# installing sqlsmith"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q sqlsmith >/dev/null
}

db=ck_fuzz
logdb=ck_fuzz_log
role=ck_fuzz
peer=ck_fuzz_peer
work=$(mktemp -d)
chmod 755 "$work"

cleanup() {
    dropdb --if-exists --force "$db" >/dev/null 2>&1 || true
    dropdb --if-exists --force "$logdb" >/dev/null 2>&1 || true
    psql -X -q -d postgres -c "DROP ROLE IF EXISTS $peer" -c "DROP ROLE IF EXISTS $role" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

. "$here/tap.sh"
su_sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

# Crash lines the postmaster writes when a backend dies (signal, exception, abnormal exit),
# and what an assertion or PANIC leaves.
# (A parallel worker that raised an error exits with code 1, which is logged too: no crash.)
crash_re='terminated by signal|terminated by exception|exited with exit code ([02-9]|1[0-9])|was terminated|PANIC:|TRAP:|terminating any other active server processes|all server processes terminated|database system was interrupted'
log_since() { tail -c +$(($1 + 1)) "$CK_SERVER_LOG"; }

t_start=$SECONDS
log_start=$(stat -c %s "$CK_SERVER_LOG")

# ---------------------------------------------------------------------------------------
# Set-up: the owner role (not a superuser: a fuzzer must not be able to kill the server
# with superuser functions), a peer role without rights, the sample database.
dropdb --if-exists --force "$db" >/dev/null 2>&1 || true
dropdb --if-exists --force "$logdb" >/dev/null 2>&1 || true
psql -X -q -d postgres -c "DROP ROLE IF EXISTS $peer" -c "DROP ROLE IF EXISTS $role" >/dev/null 2>&1 || true
setup_ok=true
{
    su_sql -c "CREATE ROLE $role LOGIN" -c "CREATE ROLE $peer LOGIN" -c "GRANT $peer TO $role" \
        -c "ALTER ROLE $role SET statement_timeout = '5s'" &&
        createdb -O "$role" "$db" &&
        su_sql -d "$db" -v role="$role" -f "$here/fuzz_schema.sql" >/dev/null &&
        su_sql -d "$db" -c "ALTER DATABASE $db SET track_functions = 'all'" \
            -c "CREATE SCHEMA ck_focus AUTHORIZATION $role" \
            -c "CREATE VIEW ck_focus.pg_proc AS SELECT * FROM pg_catalog.pg_proc AS p
                WHERE p.pronamespace = 'ck'::regnamespace OR p.prokind = 'a'
                   OR p.proname IN ('now', 'length', 'upper', 'repeat', 'jsonb_build_object', 'int4', 'int8', 'numeric')" \
            -c "GRANT SELECT ON ck_focus.pg_proc TO PUBLIC" &&
        createdb "$logdb" &&
        su_sql -d "$logdb" -f - <<'EOF'
-- What sqlsmith --log-to writes (its log.sql, reduced to the columns it fills).
CREATE TABLE instance (id bigserial PRIMARY KEY, rev text, target text, hostname text, version text, seed text,
                       t timestamptz DEFAULT now());
CREATE TABLE error (id bigint REFERENCES instance, msg text, query text, target text, sqlstate text,
                    t timestamptz DEFAULT now(), errid bigserial PRIMARY KEY);
CREATE TABLE stat (id bigint REFERENCES instance, generated bigint, level float, nodes float, retries float,
                   updated timestamptz, impedance jsonb);
EOF
} >"$work/setup.log" 2>&1 || setup_ok=false
if $setup_ok; then ok "set-up: sample database $db (queues, counters, bookings with a guard, states, lock namespaces)"; else
    not_ok "set-up: sample database $db"
    sed 's/^/# /' "$work/setup.log"
    echo "1..$n"
    exit 1
fi

# ---------------------------------------------------------------------------------------
# sqlsmith: two passes with fixed seeds. sqlsmith reads the functions it may call with an
# unqualified "FROM pg_proc": the second pass puts schema ck_focus ahead of pg_catalog, whose
# view pg_proc holds ck's functions and the aggregates only, so its calls are nearly all ours.
smith_pass() {   # smith_pass NAME QUERIES SEED [OPTIONS]: runs sqlsmith, logging errors to $logdb
    local name=$1 queries=$2 s=$3 opts=${4:-} t0=$SECONDS status=0
    local target="host=$PGHOST port=$PGPORT dbname=$db user=$role"
    [[ -z $opts ]] || target+=" options='$opts'"
    timeout -k 10 1800 sqlsmith --target="$target" --log-to="host=$PGHOST port=$PGPORT dbname=$logdb user=$PGUSER" \
        --seed="$s" --max-queries="$queries" --exclude-catalog --dump-all-queries \
        >"$work/smith_$name.sql" 2>"$work/smith_$name.err" || status=$?
    local calls errors
    calls=$(grep -o 'ck\.[a-z_]*(' "$work/smith_$name.sql" | wc -l)
    # --log-to stores the generator's state as seed: the newest instance is this pass
    errors=$(su_sql -d "$logdb" -c "SELECT count(*) FROM error WHERE id = (SELECT max(id) FROM instance)" || echo '?')
    echo "# sqlsmith $name: $queries queries, seed $s, $((SECONDS - t0)) s, exit status $status;" \
        "$errors errors; $calls ck calls in the query text"
    grep -o 'ck\.[a-z_]*(' "$work/smith_$name.sql" | sort | uniq -c | sort -rn | head -n 50 |
        awk '{ printf "%s %s", sep, $2 $1; sep = "," } END { print "" }' | sed 's/^/#   /; s/(/ /g'
    [[ $status -eq 0 ]]
}

# PostgreSQL's own internal errors that sqlsmith reaches through a function of the catalog, whatever else the
# query calls, as "FUNCTION|CALL|MESSAGE": CALL alone raises XX000 MESSAGE. pg_get_acl elogs an unknown class ID
# where it should answer NULL (seen on 19rc1: pg_my_temp_schema() is 0 without a temporary schema). An entry
# applies only where its CALL still raises the error, and to a query only when replay_pg_fault proves it.
# pg_describe_object and pg_identify_object(_as_address) elog for a class ID that is no catalog (15: with a
# sub-ID, via getObjectClass; 17 and later: any) where they should answer NULL (seen on 15 with 1.1.0's
# ck.rate_starts sampled beside them).
known_pg=("pg_get_acl|SELECT pg_catalog.pg_get_acl(0, 1, 0)|unrecognized class ID: ")
for f in pg_describe_object pg_identify_object pg_identify_object_as_address; do
    known_pg+=("$f|SELECT pg_catalog.$f(11, 0, 1)|invalid non-zero objectSubId for object class "
        "$f|SELECT pg_catalog.$f(11, 0, 1)|unsupported object class: ")
done

replay() {   # replay ERRID FILE: runs the query in FILE as the pass of error ERRID did, rolled back; prints its ERROR lines
    local opts out status=0
    opts=$(su_sql -d "$logdb" -c "SELECT coalesce(substring(i.target FROM \$\$options='([^']*)'\$\$), '')
                                   FROM error AS e JOIN instance AS i USING (id) WHERE e.errid = $1")
    out=$({ echo 'BEGIN;'; cat "$2"; printf '\n;\nROLLBACK;\n'; } |
        PGOPTIONS=$opts psql -X -q -d "$db" -U "$role" -v VERBOSITY=verbose 2>&1) || status=$?
    grep '^ERROR:' <<<"$out" || true
    ((status == 0)) || echo "ERROR: psql exited with status $status"   # not run: proves nothing
}

# replay_pg_fault ERRID: true when the XX000 of query ERRID is a known_pg error raised by its FUNCTION: the CALL
# raises it on this server, the query replayed raises it again, and the query with pg_catalog.FUNCTION replaced
# by a stub of the same signature returning NULL (schema ck_fuzz_known) raises no error at all.
replay_pg_fault() {
    local id=$1 entry f call message msg out
    msg=$(su_sql -d "$logdb" -c "SELECT msg FROM error WHERE errid = $id")
    su_sql -d "$logdb" -c "SELECT query FROM error WHERE errid = $id" >"$work/replay.sql"
    for entry in "${known_pg[@]}"; do
        IFS='|' read -r f call message <<<"$entry"
        [[ $msg == "ERROR:  $message"* ]] || continue
        grep -q "pg_catalog\.$f(" "$work/replay.sql" || continue
        out=$(su_sql -d "$db" -v VERBOSITY=verbose -c "$call" 2>&1 || true)
        [[ $out == *"ERROR:  XX000: $message"* ]] || continue
        su_sql -d "$db" -v f="$f" >/dev/null <<'EOF' || continue
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS ck_fuzz_known;
GRANT USAGE ON SCHEMA ck_fuzz_known TO PUBLIC;
SELECT format('CREATE OR REPLACE FUNCTION ck_fuzz_known.%I(%s) RETURNS %s LANGUAGE sql AS %L', p.proname,
              pg_get_function_arguments(p.oid), pg_get_function_result(p.oid), 'SELECT NULL::' || pg_get_function_result(p.oid))
FROM pg_proc AS p WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname = :'f' \gexec
EOF
        [[ $(replay "$id" "$work/replay.sql") == "ERROR:  XX000: $message"* ]] || continue
        sed "s/pg_catalog\.$f(/ck_fuzz_known.$f(/g" "$work/replay.sql" >"$work/replay_stub.sql"
        [[ -z $(replay "$id" "$work/replay_stub.sql") ]] || continue
        echo "# XX000 of PostgreSQL's $f, not ck's ($call raises it alone; the query replayed raised it, and with" \
            "$f stubbed ran without error): $(tr -s '[:space:]' ' ' <"$work/replay.sql" | cut -c 1-400)"
        return 0
    done
    return 1
}

if command -v sqlsmith >/dev/null || ensure_sqlsmith; then
    check "sqlsmith over every function: $smith_all queries (seed $seed) ran to the end" \
        smith_pass all "$smith_all" "$seed"
    check "sqlsmith focused on ck: $smith_ck queries (seed $((seed + 1))) ran to the end" \
        smith_pass ck "$smith_ck" "$((seed + 1))" "-c search_path=ck_focus,pg_catalog"
    lost=$(su_sql -d "$logdb" -c "SELECT count(*) FROM error
                                  WHERE msg ~* 'server closed the connection|connection to server was lost|terminating connection because of crash'" || echo '?')
    check "sqlsmith: no query lost its connection ($lost did)" test "$lost" = 0
    echo "# sqlsmith errors by SQLSTATE (both passes): $(su_sql -d "$logdb" -c "SELECT string_agg(s || ' ' || n, ', ' ORDER BY n DESC)
        FROM (SELECT coalesce(nullif(sqlstate, ''), '?') AS s, count(*) AS n FROM error GROUP BY 1) AS e" || true)"
    internal_ck=0 internal_pg=0
    for id in $(su_sql -d "$logdb" -c "SELECT errid FROM error WHERE sqlstate = 'XX000' AND query ~ '\mck\.[a-z_]+\('" ||
        echo '?'); do
        if [[ $id == '?' ]]; then internal_ck='?'
        elif replay_pg_fault "$id"; then internal_pg=$((internal_pg + 1))
        else internal_ck=$((internal_ck + 1)); fi
    done
    internal_other=$(su_sql -d "$logdb" -c "SELECT count(*) FROM error WHERE sqlstate = 'XX000' AND query !~ '\mck\.[a-z_]+\('" || echo '?')
    echo "# sqlsmith: $internal_ck internal errors (XX000) in queries calling a ck function, $internal_pg more there" \
        "proved PostgreSQL's own (known_pg), $internal_other in queries calling none (PostgreSQL's own)"
    su_sql -d "$logdb" -c "SELECT '# XX000: ' || split_part(msg, E'\n', 1) || ' -- ' || left(regexp_replace(query, '\s+', ' ', 'g'), 400)
                           FROM error WHERE sqlstate = 'XX000' ORDER BY query ~ '\mck\.[a-z_]+\(' DESC LIMIT 10" || true
    check "sqlsmith: no internal error (XX000) in a query that calls a ck function" test "$internal_ck" = 0
else
    not_ok "sqlsmith is not installed"
fi

# ---------------------------------------------------------------------------------------
# The generator: random calls of every function, in every context.
python3 "$here/fuzz_calls.py" run "$generated" "$seed" "$work" -h "$PGHOST" -p "$PGPORT" -U "$role" -d "$db" \
    >"$work/generator.out" 2>&1 || true
grep '^#' "$work/generator.out" || true
result=$(grep '^RESULT ' "$work/generator.out" || echo "RESULT")
get() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$result"; }
check "generator: $generated calls (seed $seed) ran to the end" test "$(get complete)" = 1
check "generator: no call lost its connection ($(get crashes) did)" test "$(get crashes)" = 0
sed 's/^/# lost: /' "$work/crashes.txt" 2>/dev/null | head -n 20 || true
check "generator: no internal error (XX000) ($(get internal) calls raised one)" test "$(get internal)" = 0
sed 's/^/# XX000: /' "$work/internal.txt" 2>/dev/null | head -n 20 || true

# ---------------------------------------------------------------------------------------
# The hostile list (hostile_calls.sql, run by fuzz_hostile.sh in a fresh copy of the sample
# database): every call with its SQLSTATE, checked against what fits, and nothing changed
# where an error was raised.
t0=$SECONDS
hostile_lines=0
while IFS= read -r line; do
    case $line in
        "ok - "*) ok "hostile: ${line#ok - }"; hostile_lines=$((hostile_lines + 1)) ;;
        "not ok - "*) not_ok "hostile: ${line#not ok - }"; hostile_lines=$((hostile_lines + 1)) ;;
        "#"*) echo "$line" ;;
        *) echo "# $line" ;;
    esac
done < <(bash "$here/fuzz_hostile.sh" "$role" "$work" 2>&1)
echo "# hostile list: $((SECONDS - t0)) s"
((hostile_lines > 0)) || not_ok "hostile: the list printed no result"

# ---------------------------------------------------------------------------------------
# Every function of the extension was really executed (pg_stat_user_functions, counted
# with track_functions = all: calls that returned, not those that raised; the statistics of
# the fuzzing sessions are flushed when they end). Calls in the hostile list (another
# database) are not counted here.
sleep 1.5
su_sql -d "$db" -F ' ' -c "SELECT p.proname || CASE WHEN count(*) OVER (PARTITION BY p.proname) > 1
                                                   THEN '(' || format_type(p.proargtypes[0], NULL) || ')' ELSE '' END,
                                   coalesce(s.calls, 0)
                            FROM pg_proc AS p LEFT JOIN pg_stat_user_functions AS s ON s.funcid = p.oid
                            WHERE p.pronamespace = 'ck'::regnamespace
                              -- they return only on a Citus cluster (test/citus/t/distributed_queue.pl)
                              AND p.proname NOT IN ('distribute_queue', 'attach_queue_shard')
                            ORDER BY 2, 1" >"$work/calls.txt"
never=$(awk '$NF == 0 { printf "%s ", $1 }' "$work/calls.txt")
total_calls=$(awk '{ s += $NF } END { print s + 0 }' "$work/calls.txt")
echo "# executions per function (all passes): $(awk '{ printf "%s%s %s", sep, $1, $NF; sep = ", " }' "$work/calls.txt")"
check "every ck function was executed by the fuzzers ($total_calls executions; never: ${never:-none})" test -z "$never"

# ---------------------------------------------------------------------------------------
# The server: still up, and no backend died.
check "the server still answers" su_sql -d "$db" -c "SELECT 1" -o /dev/null
log_since "$log_start" | grep -E "$crash_re" >"$work/crash_lines.txt" || true
check "server log: no backend crashed ($(wc -l <"$work/crash_lines.txt") crash lines)" test ! -s "$work/crash_lines.txt"
sed 's/^/# /' "$work/crash_lines.txt" | head -n 20

echo "# fuzz.sh $mode: $((SECONDS - t_start)) s in all; $n checks, $failed failed"
echo "1..$n"
((failed == 0))
