#!/usr/bin/env bash
# Issue 47's queue in production under faults: workers terminated and the server crashed while a
# paused (the queue, and one concurrency key at a time), rate-limited, timed queue with a history
# runs. Prints TAP and a report ('#' lines).
#
#   bash test/chaos/queue_production.sh full|short
#
#   full   (make chaos, about 3 minutes): 100 s of load, 3 crash restarts, 12 worker backends
#          terminated, a pause every 1-2 s, a key's pause every 1-2 s (each crash while a key is paused)
#   short  (make test, about 30-40 s): 14 s of load, 1 crash restart, 3 terminations
#
# Checks: every job completed once (its effect and its history record, with its result) or a dead
# letter (with its record), none lost or twice; no rate-limited key over its rate in any window of
# its period (committed claims); no claim committed while paused; no claim of a paused key
# committed while it was paused, its pause kept by the crash restart, none of its jobs left parked
# after its resume; no completion accepted after its attempt's timeout; no PANIC or signal in the
# server log but the SIGKILLs sent.
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
# shellcheck source=test/chaos/python_tap.sh
source "$here/python_tap.sh"

status=0
run_python_tap queue_production.py "$limit" "$@" || status=$?
ensure_server_up
exit "$status"
