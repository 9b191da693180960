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
# shellcheck source=test/chaos/python_tap.sh
source "$here/python_tap.sh"

status=0
run_python_tap faults.py "$limit" "$@" || status=$?
ensure_server_up
exit "$status"
