#!/usr/bin/env bash
# The Python worker (test/client/python/ckworker.py, psycopg 3 from Debian's python3-psycopg): 8 worker
# threads drain 2,000 jobs (heartbeats, ck.fail and retry, effects and their results in the history
# exactly once), sell the last units with ck.decrement (CK001 in the driver's error), meet a timed
# ck.xact_lock held by another connection (55P03, connection usable afterwards), CALL ck.retry, and
# enqueue one unique key from 8 producers at once, then cancel its job waiting and running; the same
# workers run a workflow of dependent jobs (a fan-out and a fan-in: dependency_checks), and a cancelled
# job buries the jobs after it. Then the README's worker (test/client/python/worker.py) as it is:
# short_worker (its results in the history; paused, then resumed, while its producer awaits a job).
# Prints TAP.
# needs: psycopg   (test/run.sh skips this suite where one is missing)
set -euo pipefail
source "$(dirname "$0")/lib/tap.sh"

db=ck_python
trap 'drop_db "$db"; drop_db ck_short; rm -rf "$tap_dir"' EXIT
python=/usr/bin/python3   # Debian's, whose dist-packages hold psycopg (not a python3 earlier in PATH)

if "$python" -c 'import psycopg' 2>/dev/null; then
    ok "python: psycopg $("$python" -c 'import psycopg; print(psycopg.__version__)') from Debian imports in $python"
else
    not_ok "python: psycopg from Debian imports in $python (apt-get install python3-psycopg)"
    tap_done
    exit 1
fi
setup_db "$db" 2000
run_tap "python worker" 150 "$python" "$client_dir/python/ckworker.py" --workers 8 queue decrement lock retry unique dependencies optimistic
dependency_checks python
outcome_checks python 8
short_worker "python README worker" "" "$python" "$client_dir/python/worker.py"
tap_done
