#!/usr/bin/env bash
# `make demo|test|bench`: install build dependencies, build and install the extension, run MODE on a throwaway cluster.
set -euo pipefail
shopt -s nullglob

mode=${1:-}
case $mode in
    demo | test | bench | chaos | bench-peers | bench-sustained | bench-horizon) ;;
    *) echo "usage: $0 demo|test|bench|chaos|bench-peers|bench-sustained|bench-horizon [MAJOR]" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."

# The host's PostgreSQL is bookworm's 15; another major runs in a Debian root of its own (test/major.sh), where
# this script runs again with CK_PG set and the packages already in place.
host_major=15
major=${CK_PG:-$host_major}
if [[ -n ${2:-} && $2 != "$major" ]]; then
    exec bash "$here/major.sh" "$2" "$mode"
fi
export CK_PG=$major

packages=("postgresql-server-dev-$major" "postgresql-$major-pgtap" libtap-parser-sourcehandler-pgtap-perl)
# test/client: the Go, Python and Node workers, PgBouncer. Node's pg comes from npm (test/client/node);
# a machine without node gets Debian's.
packages+=(golang-go golang-github-jackc-pgx-v4-dev python3-psycopg pgbouncer)
# test/client/queue_activity.sh: the shipped query file, read by the Prometheus exporter.
packages+=(prometheus-postgres-exporter curl)
# test/client/periodic_cron.sh: periodic jobs scheduled by pg_cron.
packages+=("postgresql-$major-cron")
# test/citus: PostgreSQL's TAP framework needs IPC::Run; Citus, built from its sources (test/citus.sh), lz4, zstd and
# the GSSAPI and ICU headers the server's headers include.
packages+=(libipc-run-perl xz-utils liblz4-dev libzstd-dev libkrb5-dev libicu-dev)
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
# The long benchmarks draw their plots with gnuplot; bench-peers also runs PgQ.
[[ $mode != bench-sustained && $mode != bench-horizon && $mode != bench-peers ]] || packages+=(gnuplot-nox)
[[ $mode != bench-peers ]] || packages+=("postgresql-$major-pgq3")

ensure_packages() {
    [[ -z ${CK_IN_ROOT:-} ]] || return 0
    local p missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    ((${#missing[@]} > 0)) || return 0
    if [[ $EUID -ne 0 ]]; then
        echo "missing packages: ${missing[*]}" >&2
        echo "install them as root: apt-get install ${packages[*]}" >&2
        exit 1
    fi
    echo "== installing ${missing[*]}"
    apt-get update -q
    # The packages' daemons (pgbouncer, the exporter) are not for us to start: a policy-rc.d says so.
    local policy=/usr/sbin/policy-rc.d made=
    [[ -e $policy ]] || { printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made=1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}"
    [[ -z $made ]] || rm -f "$policy"
}

passed=0
failed=0
skipped=()

# have TOOL: a tool a suite may need ("# needs: ..." in its script): a command, or pgx / psycopg / pgtap.
have() {
    case $1 in
        pgx) [[ -d /usr/share/gocode/src/github.com/jackc/pgx ]] ;;
        psycopg) /usr/bin/python3 -c 'import psycopg' 2>/dev/null ;;
        pgtap) [[ -f $("$PG_CONFIG" --sharedir)/extension/pgtap.control ]] ;;
        pg_cron) [[ -f $("$PG_CONFIG" --pkglibdir)/pg_cron.so ]] ;;
        ipc-run) perl -MIPC::Run -e 1 2>/dev/null ;;
        *) command -v "$1" >/dev/null ;;
    esac
}

# runnable NAME NEEDS...: true when every one of NEEDS is here; else notes NAME as skipped (said beside the totals).
runnable() {
    local name=$1 need lacking=()
    shift
    for need in "$@"; do have "$need" || lacking+=("$need"); done
    ((${#lacking[@]} == 0)) && return 0
    echo "== $name: skipped: no ${lacking[*]} here"
    skipped+=("$name (no ${lacking[*]})")
    return 1
}

# script_runnable SCRIPT: runnable for the tools its "# needs:" line names.
script_runnable() {
    # shellcheck disable=SC2046
    runnable "$1" $(sed -n 's/^# needs: \([^(]*\).*/\1/p' "$1")
}

# count_regress FILE: prints "PASSED FAILED" for the pg_regress / pg_isolation_regress test lines in FILE
# ("test name ... ok" up to 15, TAP's "ok N - name" / "not ok N - name" from 16).
count_regress() {
    awk '/^(test |     )[^ ]+ +\.\.\. / { if (/\.\.\. ok /) p++; else f++ }
         /^ok [0-9]+ / { p++ }
         /^not ok [0-9]+ / { f++ }
         END { print p + 0, f + 0 }' "$1"
}

# count_tap FILE: prints "PASSED FAILED" for the TAP "ok N" / "not ok N" lines in FILE (a failing TODO test is no failure).
count_tap() {
    awk '/^[ \t]*ok [0-9]/ { p++ }
         /^[ \t]*not ok [0-9]/ { if (/# *TODO/) p++; else f++ }
         END { print p + 0, f + 0 }' "$1"
}

# suite NAME COUNTER CMD...: runs CMD (output shown and kept), adds its results to the totals; fails if any test failed.
# A non-zero exit of CMD with no failing test line counts as one failure. Sets log_offset for show_failure.
suite() {
    local name=$1 counter=$2 out="$workdir/${1//\//_}.out" status=0 p f start=$SECONDS
    shift 2
    echo "== $name"
    log_offset=$(stat -c %s "$CK_SERVER_LOG" 2>/dev/null || echo 0)  # 0 before the cluster starts
    "$@" 2>&1 | tee "$out" || status=$?
    read -r p f < <("$counter" "$out")
    if ((status != 0 && f == 0)); then
        echo "$name exited with status $status"
        f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    echo "-- $name: $p passed, $f failed in $((SECONDS - start)) s"
    ((f == 0))
}

# show_failure [DIFFS]: after a failed suite, prints the diffs file, if any, and the server log the suite wrote.
show_failure() {
    if [[ -s ${1:-} ]]; then
        echo "-- $1"
        cat "$1"
    fi
    echo "-- $CK_SERVER_LOG during this suite (last 50 lines)"
    tail -c +$((log_offset + 1)) "$CK_SERVER_LOG" | tail -n 50
}

# pgtap FILE...: runs the pgTAP files in a fresh database with both extensions (chained: errexit is off under `||`).
pgtap() {
    createdb ck_tap &&
        psql -X -q -v ON_ERROR_STOP=1 -d ck_tap -c 'CREATE EXTENSION pgtap' -c 'CREATE EXTENSION concurrency_kit' &&
        pg_prove --verbose -d ck_tap "$@"
}

# chaos_suites MODE: every executable test/chaos/*.sh, with MODE (short in make test, full in make chaos).
chaos_suites() {
    local script
    for script in test/chaos/*.sh; do
        [[ -x $script ]] || continue
        script_runnable "$script" || continue
        suite "$script $1" count_tap "$script" "$1" || show_failure
    done
}

# citus_suite: test/citus (a Citus cluster of its own per test file) when Citus is installed for this major or can
# be built from CK_CITUS_SOURCE (test/citus.sh); else skipped, with the reason ("no Citus for PostgreSQL 19").
# citus_suite FILE...: only those test files, at full size (CK_CHAOS=full; make chaos runs the fault test so).
citus_suite() {
    local why
    if ! why=$(bash "$here/citus.sh" ensure); then
        echo "== citus: skipped: $why"
        skipped+=("citus ($why)")
        return 0
    fi
    runnable citus prove ipc-run || return 0
    if (($# == 0)); then
        suite citus count_tap bash "$here/citus/run.sh" || true
    else
        suite "citus $* full" count_tap env CK_CHAOS=full bash "$here/citus/run.sh" "$@" || true
    fi
}

# totals: the closing line; fails unless some test ran and none failed.
totals() {
    echo
    ((${#skipped[@]} == 0)) || printf 'skipped on PostgreSQL %s: %s\n' "$major" "${skipped[*]}"
    ((passed + failed > 0)) || echo "no tests ran"
    echo "$passed passed, $failed failed"
    ((failed == 0 && passed > 0))
}

# build_check: one TAP line: the build of this run printed no compiler warning.
build_check() {
    local warnings
    warnings=$(grep -c 'warning:' "$workdir/build.out" || true)
    if ((warnings == 0)); then
        echo "ok 1 - PostgreSQL $major: $(find src -name "*.o" | wc -l) objects compiled without a warning"
    else
        echo "not ok 1 - PostgreSQL $major: the build printed $warnings warnings"
        grep -A3 'warning:' "$workdir/build.out" | sed 's/^/# /'
    fi
}

run_tests() {
    local script
    suite build count_tap build_check || show_failure
    rm -rf results output_iso regression.diffs regression.out
    # REGRESS and ISOLATION run as two steps, so that a pg_regress failure does not skip the isolation tests.
    suite regress count_regress make -s installcheck PG_CONFIG="$PG_CONFIG" ISOLATION= ||
        show_failure regression.diffs
    suite isolation count_regress make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= ||
        show_failure output_iso/regression.diffs

    local tap_files=(test/pgtap/*.sql)
    if ((${#tap_files[@]} > 0)); then
        if runnable pgtap pg_prove pgtap; then
            suite pgtap count_tap pgtap "${tap_files[@]}" || show_failure
        fi
    else
        echo "== pgtap: no test/pgtap/*.sql, skipped"
    fi

    local clients=0
    for script in test/client/*.sh; do
        [[ -x $script ]] || continue
        clients=$((clients + 1))
        script_runnable "$script" || continue
        suite "$script" count_tap "$script" || show_failure
    done
    ((clients > 0)) || echo "== client: no executable test/client/*.sh, skipped"

    chaos_suites short
    citus_suite

    # The suites above ran with the library preloaded; the queue's suites run again without it, where the
    # first use of a queue makes the shared state (frontier, wake-ups, counters) after the restart: the
    # same answers.
    bash "$here/cluster.sh" preload off
    rm -rf results output_iso regression.diffs regression.out
    suite "regress, not preloaded" count_regress make -s installcheck PG_CONFIG="$PG_CONFIG" ISOLATION= ||
        show_failure regression.diffs
    suite "isolation, not preloaded" count_regress make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= ||
        show_failure output_iso/regression.diffs
    for script in test/client/claim_wait.sh test/client/queue_activity.sh test/client/queue_workers.sh test/client/await_job.sh \
        test/client/python_worker.sh; do
        [[ -x $script ]] || continue
        script_runnable "$script" || continue
        suite "$script, not preloaded" count_tap "$script" || show_failure
    done
    bash "$here/cluster.sh" preload on
    totals
}

ensure_packages
eval "$(bash "$here/cluster.sh" env)"

workdir=$(mktemp -d)
cleanup() {
    bash "$here/cluster.sh" stop
    rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# make test checks the tree's shape first, cheaply, before the build (test/layers.sh: every include of src/ points down
# the floors of src/README.md; the tests' names); a failure there fails the run at its closing line.
if [[ $mode == test ]] && runnable layers python3; then
    suite layers count_tap bash "$here/layers.sh" || true
fi
echo "== building and installing concurrency_kit for PostgreSQL $major"
# make test compiles every object anew, so that its warning check sees them all.
[[ $mode != test ]] || make -s clean PG_CONFIG="$PG_CONFIG"
make -s PG_CONFIG="$PG_CONFIG" 2>&1 | tee "$workdir/build.out"
make -s install PG_CONFIG="$PG_CONFIG"

bash "$here/cluster.sh" start

case $mode in
    demo) bash "$here/demo.sh" ;;
    test) run_tests ;;
    bench) bash "$here/bench/run.sh" ;;
    chaos) chaos_suites full && citus_suite t/distributed_queue_faults.pl && totals ;;
    bench-peers) bash "$here/bench/peers/run.sh" ;;
    bench-sustained) bash "$here/bench/sustained/run.sh" ;;
    bench-horizon) bash "$here/bench/horizon/run.sh" ;;
esac
