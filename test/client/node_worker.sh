#!/usr/bin/env bash
# The Node worker (test/client/node/ckworker.js, pg from npm, pinned in package-lock.json): a pg.Pool of
# 8 drains 2,000 jobs (heartbeats, ck.fail and retry, effects and their results in the history exactly
# once), sells the last units with ck.decrement (CK001 in error.code), meets a timed ck.xact_lock held
# by another pooled connection (55P03, connection usable afterwards), calls CALL ck.retry, and enqueues
# one unique key from 8 producers at once, then cancels its job waiting and running; the same workers
# run a workflow of dependent jobs (a fan-out and a fan-in: dependency_checks), and a cancelled job
# buries the jobs after it; results through the overloads with untyped parameters. Then the README's
# worker (test/client/node/worker.js) as it is: short_worker (its results in the history; paused, then
# resumed, while its producer awaits a job). Prints TAP.
# needs: node npm   (test/run.sh skips this suite where one is missing)
set -euo pipefail
source "$(dirname "$0")/lib/tap.sh"

db=ck_node
trap 'drop_db "$db"; drop_db ck_short; rm -rf "$tap_dir"' EXIT

# npm ci: exactly the locked versions, into test/client/node/node_modules (git-ignored).
if out=$(cd "$client_dir/node" && npm ci --no-audit --no-fund --prefer-offline 2>&1); then
    ok "node: npm ci installed pg $(cd "$client_dir/node" && node -p 'require("pg/package.json").version') (node $(node --version))"
else
    not_ok "node: npm ci in test/client/node"
    sed 's/^/# /' <<<"$out" | tail -n 20
    tap_done
    exit 1
fi
setup_db "$db" 2000
run_tap "node worker" 150 node "$client_dir/node/ckworker.js" --workers 8 queue decrement lock retry unique dependencies optimistic results
dependency_checks node
outcome_checks node 8
short_worker "node README worker" "" node "$client_dir/node/worker.js"
tap_done
