#!/usr/bin/env bash
# The shared state without a preload (0.4.0): the claim frontier, claim_wait's wake-up on commit
# and the activity counters, made by the first use of a queue after the server's start and
# attached to by every other backend at its first queue call or queue trigger. On the harness
# cluster restarted without the library in shared_preload_libraries:
#
#   early     sessions that loaded the library before the state existed (LOAD, a function that
#             uses no queue) work beside sessions that came after it: every job claimed and
#             completed once, claims from the frontier, exact counters, claim_wait woken by a
#             commit from the other kind of session (both ways)
#   crash     SIGKILL of a backend under load (crash restart), then on: exactly once across the
#             restarts, no two committed claims holding a job at once, the state made anew (no
#             frontier, counters from zero), no PANIC or signal but ours in the server log
#   recreate  DROP EXTENSION ... CASCADE and CREATE EXTENSION in the running server: a new queue
#             works, from its frontier, counted, with a session open across the two
#   frontier  plain INSERTs of five priorities from backends attached by the queue's trigger,
#             claimed by others: every job claimed well within concurrency_kit.full_claim_interval
#             (10 s) of its insert and of the producers' stop
#
#   bash test/chaos/shared_state.sh full|short [early|crash|recreate|frontier ...]
#
#   short  (make test, about 30 s): 1 crash, 3 to 8 s of load a part
#   full   (make chaos, about 2.5 minutes): 3 crashes, 10 to 60 s of load a part
#
# Needs the throwaway cluster of test/cluster.sh (eval "$(bash test/cluster.sh env)": PGHOST, PGPORT,
# PGUSER, CK_SERVER_LOG) and python3 with psycopg 3. It restarts that cluster with `test/cluster.sh
# preload off` first and `preload on` at the end, whatever happened. The work is in shared_state.py.
# needs: psycopg   (test/run.sh skips this suite where one is missing)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=${1:-}
case $mode in
    full) limit=900 ;;
    short) limit=240 ;;
    *)
        echo "usage: $0 full|short [early|crash|recreate|frontier ...]" >&2
        exit 2
        ;;
esac
if [[ -z ${PGHOST:-} || -z ${PGPORT:-} || -z ${CK_SERVER_LOG:-} ]]; then
    echo "$0: set PGHOST, PGPORT and CK_SERVER_LOG for the throwaway cluster: eval \"\$(bash test/cluster.sh env)\"" >&2
    exit 2
fi
# shellcheck source=test/chaos/python_tap.sh
source "$here/python_tap.sh"

# The harness cluster of this environment (test/cluster.sh finds it by CK_PORT).
cluster() { CK_PORT=${CK_PORT:-$PGPORT} bash "$here/../cluster.sh" "$@"; }
restore() {
    # The server may be down if a crash was left half done: preload on restarts it (pg_ctl restart starts a
    # stopped server).
    cluster preload on >/dev/null || echo "# could not restart the cluster with the library preloaded" >&2
}
trap restore EXIT
cluster preload off

status=0
run_python_tap shared_state.py "$limit" "$@" || status=$?
exit "$status"
