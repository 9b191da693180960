# shellcheck shell=bash
# Sourced by the chaos suites whose work is a Python script (faults, queue_production, shared_state):
# run_python_tap SCRIPT LIMIT ARGS... runs $here/SCRIPT with python3 and psycopg 3, at most LIMIT
# seconds, prints its TAP (other lines, such as a traceback, as comments) and, when it did not
# reach its plan line, one failing test that says why. Returns the script's status.
# Needs PGHOST and PGPORT of the throwaway cluster (eval "$(bash test/cluster.sh env)").

if [[ -z ${PGHOST:-} || -z ${PGPORT:-} ]]; then
    echo "$0: set PGHOST and PGPORT for the throwaway cluster: eval \"\$(bash test/cluster.sh env)\"" >&2
    exit 2
fi

run_python_tap() {
    local script=$1 limit=$2 python= candidate out status n why
    shift 2
    # Debian's python3-psycopg is for /usr/bin/python3; another python3 first in PATH may lack it.
    for candidate in /usr/bin/python3 python3; do
        if command -v "$candidate" >/dev/null && "$candidate" -c 'import psycopg' 2>/dev/null; then
            python=$candidate
            break
        fi
    done
    if [[ -z $python ]]; then
        echo "not ok 1 - python3 with psycopg 3 is available (apt-get install python3-psycopg)"
        echo "1..1"
        return 1
    fi
    out=$(mktemp)
    # Lines that are not TAP (a traceback on stderr) become comments, so that TAP consumers see them.
    timeout -k 10 "$limit" "$python" -B -u "$here/$script" "$@" 2>&1 |
        sed -u -E '/^(ok [0-9]|not ok [0-9]|1\.\.[0-9]|#)/!s/^/# /' | tee "$out"
    status=${PIPESTATUS[0]}
    if ! grep -q '^1\.\.[0-9]' "$out"; then
        n=$(grep -cE '^(not )?ok [0-9]' "$out" || true)
        why="exit status $status"
        ((status != 124)) || why="timed out after ${limit}s"
        echo "not ok $((n + 1)) - $script ran to its end ($why)"
        echo "1..$((n + 1))"
        ((status != 0)) || status=1
    fi
    rm -f "$out"
    return "$status"
}

# ensure_server_up: starts the throwaway cluster's server (as its data directory's owner) if a crash the
# suite made was left half done: the server must be up at the end, whatever happened.
ensure_server_up() {
    local data pg_ctl=pg_ctl owner
    local -a as_owner=()
    data=${CK_SERVER_LOG:+$(dirname "$CK_SERVER_LOG")}
    data=${data:-/tmp/concurrency_kit-$PGPORT/data}
    [[ -z ${PG_CONFIG:-} ]] || pg_ctl=$("$PG_CONFIG" --bindir)/pg_ctl
    [[ -f $data/PG_VERSION ]] || return 0
    owner=$(stat -c %U "$data")
    [[ $EUID -ne 0 || $owner == root ]] || as_owner=(runuser -u "$owner" --)
    if ! (cd / && "${as_owner[@]}" "$pg_ctl" -D "$data" status >/dev/null 2>&1); then
        echo "# the server was down at the end: starting it"
        (cd / && "${as_owner[@]}" "$pg_ctl" -D "$data" -l "${CK_SERVER_LOG:-$data/server.log}" -w -t 120 start >/dev/null) || true
    fi
}
