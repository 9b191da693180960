#!/usr/bin/env bash
# ck.claim_wait returns as soon as a job is enqueued while it waits (not after max_wait),
# and the lease it grants counts from the claim, not from the start of the transaction.
# Prints TAP.
set -euo pipefail

db=ck_claim_wait
trap 'dropdb --if-exists "$db" >/dev/null 2>&1 || true' EXIT
dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
sql() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
sql -c "CREATE EXTENSION concurrency_kit" -c "SELECT FROM ck.create_queue('inbox', lease => '2 seconds')"

n=0
check() {  # check DESCRIPTION COMMAND...
    n=$((n + 1))
    if "${@:2}"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}

# A worker waits up to 10 s; a producer enqueues 0.5 s later.
out=$(mktemp)
sql -F ' ' -c "SELECT count(*), round(extract(epoch FROM clock_timestamp() - statement_timestamp())::numeric, 1)
               FROM ck.claim_wait('inbox', 1, NULL, '10 seconds')" >"$out" &
worker=$!
sleep 0.5
sql -c "SELECT FROM ck.enqueue('inbox', '{\"n\": 1}')"
wait "$worker"
read -r got waited <"$out"
rm -f "$out"
echo "# claim_wait returned $got job(s) after $waited s"
check "claim_wait returns the job enqueued while it waits" test "$got" = 1
check "... within a moment, not after max_wait (waited $waited s)" awk -v w="$waited" 'BEGIN { exit !(w < 3) }'

# A claim made 3 s into a transaction leases the job for 2 s from the claim.
sql -c "SELECT FROM ck.create_queue('late', lease => '2 seconds')" -c "SELECT FROM ck.enqueue('late', '{}')"
late=$(sql -c "BEGIN" -c "SELECT pg_sleep(3)" -c "SELECT lease_until > clock_timestamp() FROM ck.claim('late')" \
           -c "COMMIT" | tail -n 1)
check "a lease taken late in a transaction ends after the claim, not before it" test "$late" = t
check "nobody else can claim that job while its lease runs" test "$(sql -c "SELECT count(*) FROM ck.claim('late')")" = 0
echo "1..$n"
