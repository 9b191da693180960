#!/usr/bin/env bash
# The Go worker (test/client/go/ckworker, pgx v4 from Debian, GOPATH mode, no module downloads): 8
# pooled workers drain 2,000 jobs (heartbeats, ck.fail and retry, effects and their results in the
# history exactly once), sell the last units with ck.decrement (CK001 in the driver's error), meet a
# timed ck.xact_lock held by another pooled connection (55P03, connection usable afterwards), CALL
# ck.retry, and enqueue one unique key from 8 producers at once, then cancel its job waiting and
# running; the same workers run a workflow of dependent jobs (a fan-out and a fan-in:
# dependency_checks), and a cancelled job buries the jobs after it. Then the README's worker
# (test/client/go/worker/main.go), built with the command its header gives, run as it is: short_worker
# (its results in the history; paused, then resumed, while its producer awaits a job). Prints TAP.
# needs: go pgx   (test/run.sh skips this suite where one is missing)
set -euo pipefail
source "$(dirname "$0")/lib/tap.sh"

db=ck_go
tmp=$(mktemp -d)
trap 'drop_db "$db"; drop_db ck_short; rm -rf "$tmp" "$tap_dir"' EXIT

if build_go "$tmp/ckworker" "$tmp" 2>"$tmp/build.log"; then
    ok "go: the worker builds with Debian's golang-go and pgx v4, GOPATH mode"
else
    not_ok "go: the worker builds with Debian's golang-go and pgx v4, GOPATH mode"
    sed 's/^/# /' "$tmp/build.log"
    tap_done
    exit 1
fi

setup_db "$db" 2000
run_tap "go worker" 150 "$tmp/ckworker" -workers 8 -parts queue,decrement,lock,retry,unique,dependencies,optimistic
dependency_checks go
outcome_checks go 8
if build_short_go "$tmp/short" 2>"$tmp/short-build.log"; then
    ok "go: the README worker builds with the command in its header ($(head -n 1 "$tmp/short-build.log"))"
    short_worker "go README worker" "" "$tmp/short/worker"
else
    not_ok "go: the README worker builds with the command in its header"
    sed 's/^/# /' "$tmp/short-build.log"
fi
tap_done
