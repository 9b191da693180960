#!/usr/bin/env bash
# Reliability under faults (issue #11): crash recovery under load, backend faults, memory over
# long runs. Prints TAP and a report ('#' lines).
#
#   bash test/chaos/faults.sh full|short [crash|backend|memory ...]
#
#   full   (make chaos, about 4-6 minutes on 2 cores): 3 immediate stops and 2 SIGKILLs of a
#          worker backend under load, every backend fault 3 times, 1,000,000 calls per family
#   short  (make test, about 1 minute): 1 immediate stop and 1 SIGKILL, each fault once,
#          100,000 calls per family
#
# Needs the throwaway cluster of test/cluster.sh (eval "$(bash test/cluster.sh env)": PGHOST,
# PGPORT, PGUSER, CK_SERVER_LOG) with concurrency_kit installed, and python3 with psycopg 3
# (Debian: python3-psycopg). It stops the server with `pg_ctl -m immediate`, kills backends and
# starts it again (as the data directory's owner, through runuser when run as root), and leaves
# it running. Its databases (ck_chaos_*) are dropped when every check passed.
# The work is in faults.py and faults_{crash,backend,memory}.py beside this file.
# needs: psycopg   (test/run.sh skips this suite where one is missing)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=${1:-}
case $mode in
    full) limit=1200 ;;
    short) limit=300 ;;
    *)
        echo "usage: $0 full|short [crash|backend|memory ...]" >&2
        exit 2
        ;;
esac
if [[ -z ${PGHOST:-} || -z ${PGPORT:-} ]]; then
    echo "$0: set PGHOST and PGPORT for the throwaway cluster: eval \"\$(bash test/cluster.sh env)\"" >&2
    exit 2
fi

# Debian's python3-psycopg is for /usr/bin/python3; another python3 first in PATH may lack it.
python=
for candidate in /usr/bin/python3 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import psycopg' 2>/dev/null; then
        python=$candidate
        break
    fi
done
if [[ -z $python ]]; then
    echo "not ok 1 - python3 with psycopg 3 is available (apt-get install python3-psycopg)"
    echo "1..1"
    exit 1
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT

# Lines that are not TAP (a traceback on stderr) become comments, so that TAP consumers see them.
set +e
timeout -k 10 "$limit" "$python" -B -u "$here/faults.py" "$@" 2>&1 |
    sed -u -E '/^(ok [0-9]|not ok [0-9]|1\.\.[0-9]|#)/!s/^/# /' | tee "$out"
status=${PIPESTATUS[0]}
set -e

# The server must be up at the end, whatever happened: start it if a crash was left half done.
data=${CK_SERVER_LOG:+$(dirname "$CK_SERVER_LOG")}
data=${data:-/tmp/concurrency_kit-$PGPORT/data}
pg_ctl=pg_ctl
[[ -z ${PG_CONFIG:-} ]] || pg_ctl=$("$PG_CONFIG" --bindir)/pg_ctl
if [[ -f $data/PG_VERSION ]]; then
    as_owner=()
    owner=$(stat -c %U "$data")
    [[ $EUID -ne 0 || $owner == root ]] || as_owner=(runuser -u "$owner" --)
    if ! (cd / && "${as_owner[@]}" "$pg_ctl" -D "$data" status >/dev/null 2>&1); then
        echo "# the server was down at the end: starting it"
        (cd / && "${as_owner[@]}" "$pg_ctl" -D "$data" -l "${CK_SERVER_LOG:-$data/server.log}" -w -t 120 start >/dev/null) || true
    fi
fi

if ! grep -q '^1\.\.[0-9]' "$out"; then
    n=$(grep -cE '^(not )?ok [0-9]' "$out" || true)
    why="exit status $status"
    ((status != 124)) || why="timed out after ${limit}s"
    echo "not ok $((n + 1)) - faults.py ran to its end ($why)"
    echo "1..$((n + 1))"
    exit 1
fi
exit "$status"
