#!/usr/bin/env bash
# Issue 47's queue in production under faults: workers terminated and the server crashed while a
# paused, rate-limited, timed queue with a history runs. Prints TAP and a report ('#' lines).
#
#   bash test/chaos/queue_production.sh full|short
#
#   full   (make chaos, about 3 minutes): 100 s of load, 3 crash restarts, 12 worker backends
#          terminated, a pause every 1-2 s
#   short  (make test, about 30-40 s): 14 s of load, 1 crash restart, 3 terminations
#
# Checks: every job completed once (its effect and its history record, with its result) or a dead
# letter (with its record), none lost or twice; no rate-limited key over its rate in any window of
# its period (committed claims); no claim committed while paused; no completion accepted after
# its attempt's timeout; no PANIC or signal in the server log but the SIGKILLs sent.
# Needs the throwaway cluster of test/cluster.sh (eval "$(bash test/cluster.sh env)": PGHOST,
# PGPORT, PGUSER, CK_SERVER_LOG) with concurrency_kit installed, and python3 with psycopg 3. It
# kills backends (the postmaster's crash restart) and leaves the server running. Its database
# (ck_chaos_queue_production) is dropped when every check passed. The work is in queue_production.py.
# needs: psycopg   (test/run.sh skips this suite where one is missing)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=${1:-}
case $mode in
    full) limit=600 ;;
    short) limit=180 ;;
    *)
        echo "usage: $0 full|short" >&2
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
timeout -k 10 "$limit" "$python" -B -u "$here/queue_production.py" "$@" 2>&1 |
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
    echo "not ok $((n + 1)) - queue_production.py ran to its end ($why)"
    echo "1..$((n + 1))"
    exit 1
fi
exit "$status"
