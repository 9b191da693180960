#!/usr/bin/env bash
# Cached plans under relcache invalidation: workers on fresh connections (each builds its plans
# anew) enqueue plain, unique, keyed and dependent jobs, claim and complete them, while another
# session ANALYZEs the queues without pause, so that invalidations land while calls build and
# run their plans. A plan freed under a call that still held it once crashed a backend here
# (PostgreSQL 19) or raised "cannot apply ResourceOwner to non-saved cached plan" (15): within
# 5 to 25 s of this load on two CPUs. Checks: no failed call, no server process died, no
# internal error, and the queues drained to what the calls left.
#
#   bash test/chaos/invalidation.sh full|short      (full: 120 s, short: 20 s)
#
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a throwaway cluster (test/cluster.sh) and
# CK_SERVER_LOG. Prints TAP.
# needs: pgbench
set -euo pipefail

mode=${1:-}
case $mode in
    full) seconds=120 ;;
    short) seconds=20 ;;
    *) echo "usage: $0 full|short" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/tap.sh"
: "${CK_SERVER_LOG:?run under test/cluster.sh env}"

db=ck_invalidation
work=$(mktemp -d)
trap 'dropdb --if-exists "$db" 2>/dev/null || true; rm -rf "$work"' EXIT
dropdb --if-exists "$db" 2>/dev/null
createdb "$db"
psql -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<'SQL'
CREATE EXTENSION concurrency_kit;
SELECT ck.create_queue('jobs');
SELECT ck.create_queue('keyed');
SELECT ck.create_queue('idle');
SELECT ck.set_concurrency_limit('keyed', NULL, 1);
SQL

# One transaction a connection: a job, two after it and one after those, a unique key (taken
# twice), a keyed job; then claims and completes of both queues, and a short claim_wait on an
# empty queue (it frees retired plans between its looks).
cat >"$work/worker.sql" <<'SQL'
\set key random(1, 50)
BEGIN;
SELECT ck.enqueue('jobs', '{}') AS root \gset
SELECT ck.enqueue('jobs', '{}', after => ARRAY[:root]::bigint[]) AS a \gset
SELECT ck.enqueue('jobs', '{}', after => ARRAY[:root]::bigint[]) AS b \gset
SELECT ck.enqueue('jobs', '{}', after => ARRAY[:a, :b]::bigint[]);
SELECT ck.enqueue('jobs', '{}', unique_key => 'u' || :key);
SELECT ck.enqueue('jobs', '{}', unique_key => 'u' || :key);
SELECT ck.enqueue('keyed', '{}', concurrency_key => 'k' || :key);
COMMIT;
SELECT count(ck.complete('jobs', id, lease_token)) FROM ck.claim('jobs', 4);
SELECT count(ck.complete('keyed', id, lease_token)) FROM ck.claim('keyed', 2);
SELECT count(*) FROM ck.claim_wait('idle', 1, NULL, '20 ms');
SQL
printf 'ANALYZE jobs;\nANALYZE keyed;\nANALYZE idle;\n' >"$work/analyze.sql"

offset=$(stat -c %s "$CK_SERVER_LOG")
status=0
pgbench -n -C -c 2 -T "$seconds" -f "$work/worker.sql" "$db" >"$work/workers.out" 2>&1 &
workers=$!
pgbench -n -c 1 -T "$seconds" -f "$work/analyze.sql" "$db" >"$work/analyze.out" 2>&1 || status=$?
wait "$workers" || status=$?
sed 's/^/# /' "$work/workers.out" | grep -E 'error|processed|failed|tps' || true
log=$(tail -c +$((offset + 1)) "$CK_SERVER_LOG")

processed() { sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$1"; }
calls=$(processed "$work/workers.out")
analyzes=$(processed "$work/analyze.out")
check "both pgbench runs ended normally (status $status): no client aborted" test "$status" -eq 0
check "the workers ran ${calls:-0} transactions on fresh connections in $seconds s" test "${calls:-0}" -gt 0
check "the queues were analyzed ${analyzes:-0} times meanwhile (each a relcache invalidation)" \
    test "${analyzes:-0}" -gt $((seconds * 5))
check "no server process died (server log)" \
    test "$(grep -c 'terminated by signal\|server process .* was terminated' <<<"$log")" -eq 0
check "no internal error: no freed or unsaved plan was run (server log)" \
    test "$(grep -c 'cached plan\|XX000\|internal error' <<<"$log")" -eq 0
# Nothing fails and no lease runs out: a dead letter would be a job lost on the way.
left=$(psql -X -At -d "$db" -c "SELECT (SELECT count(*) FROM jobs_dead) + (SELECT count(*) FROM keyed_dead) + (SELECT count(*) FROM idle_dead)")
check "no job was buried or lost its dependency ($left dead letters)" test "$left" -eq 0
echo "1..$n"
((failed == 0))
