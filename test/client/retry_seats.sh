#!/usr/bin/env bash
# 16 clients each try 20 times to take a seat "if fewer than 100 are taken". Through
# CALL ck.retry at SERIALIZABLE every call succeeds and exactly 100 seats are taken; the
# same statement at READ COMMITTED without ck.retry oversells (so this test can fail).
# Prints TAP.
set -euo pipefail

db=ck_retry_seats
work=$(mktemp -d)
trap 'rm -rf "$work"; dropdb --if-exists "$db" >/dev/null 2>&1 || true' EXIT
dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
sql() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
sql -c "CREATE EXTENSION concurrency_kit" \
    -c "CREATE TABLE seats (id bigserial PRIMARY KEY, client int NOT NULL, attempt int NOT NULL)"

# The decision reads the set of seats, thinks for 5 ms, then writes: write skew waiting to happen.
take_seat="INSERT INTO seats (client, attempt) SELECT :client_id, ck.current_attempt()
FROM (SELECT count(*) AS taken FROM seats) AS s, pg_sleep(0.005) WHERE s.taken < 100"
printf '%s\n' "CALL ck.retry(\$\$${take_seat//$'\n'/ }\$\$, 'serializable', 1000);" >"$work/retry.sql"
printf '%s;\n' "${take_seat//$'\n'/ }" >"$work/plain.sql"
sed -i 's/:client_id, ck.current_attempt()/:client_id, 1/' "$work/plain.sql"

run() {  # run SCRIPT: 16 clients x 20 transactions; prints "processed failed"
    pgbench -n -d "$db" -c 16 -j 2 -t 20 -f "$1" 2>&1 |
        awk '/number of transactions actually processed/ { split($NF, a, "/"); p = a[1] }
             /number of failed transactions/ { f = $5 }
             END { print p + 0, f + 0 }'
}

n=0
check() {  # check DESCRIPTION COMMAND...
    n=$((n + 1))
    if "${@:2}"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}

read -r processed failed < <(run "$work/retry.sql")
read -r taken calls_retried max_attempt < <(sql -F ' ' -c "SELECT count(*), count(*) FILTER (WHERE attempt > 1), max(attempt) FROM seats")
echo "# ck.retry at SERIALIZABLE: $processed calls, $failed failed; $taken seats taken; $calls_retried of the successful inserts needed a retry, at most $max_attempt attempts"
check "every CALL ck.retry succeeded (320 processed, 0 failed)" test "$processed $failed" = "320 0"
check "exactly 100 seats taken through ck.retry at SERIALIZABLE" test "$taken" = 100
check "some calls were retried (the workload really conflicts)" test "$calls_retried" -gt 0

sql -c "TRUNCATE seats"
read -r processed failed < <(run "$work/plain.sql")
taken=$(sql -c "SELECT count(*) FROM seats")
echo "# the same statement at READ COMMITTED without ck.retry: $taken seats taken"
check "without ck.retry the same workload oversells ($taken > 100)" test "$taken" -gt 100
echo "1..$n"
