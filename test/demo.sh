#!/usr/bin/env bash
# `make demo`: short acts, each a concurrency bug in plain SQL (or a crash) and the same job done with
# concurrency_kit: stock, a crashed queue worker, one outbox relay, write skew, double bookings; then the
# race detector finding the first act's naive seller.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PGDATABASE=ck_demo PGOPTIONS='-c client_min_messages=warning'
clients=8
per_client=20
attempts=$((clients * per_client))

sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

# crowd SCRIPT: $clients concurrent clients each run the pgbench script test/demo/SCRIPT $per_client times.
crowd() { pgbench -n -c "$clients" -j 2 -t "$per_client" -f "$here/demo/$1" >/dev/null; }

# Act 1 ------------------------------------------------------------------------------------
units=50

# sell SCRIPT: restocks $units units of sku 1, lets the crowd buy with SCRIPT, and says what happened.
sell() {
    local sold left lost
    sql -c "TRUNCATE sales" -c "UPDATE stock SET qty = $units WHERE sku = 1"
    crowd "$1"
    read -r sold left < <(sql -F ' ' -c "SELECT (SELECT count(*) FROM sales), qty FROM stock WHERE sku = 1")
    lost=$((sold - (units - left)))
    echo "    sold $sold units of $units, $left left in stock"
    if ((sold > units)); then
        echo "    -> oversold: $((sold - units)) units sold that never existed"
    fi
    if ((lost > 0)); then
        echo "    -> lost updates: $lost sales never reached the stock count; clients that read"
        echo "       the same qty at the same moment all wrote back the same value"
    fi
    if ((sold <= units && lost == 0)); then
        echo "    -> every unit sold exactly once; the other $((attempts - sold)) attempts were refused"
    fi
}

act_last_units() {
    echo
    echo "Act 1: the last units of stock"
    echo "  $units units of sku 1 in stock; $clients clients sell one unit per transaction, $attempts attempts in all."
    sql -c "CREATE TABLE stock(sku int PRIMARY KEY, qty int NOT NULL)" -c "INSERT INTO stock VALUES (1, $units)" \
        -c "CREATE TABLE sales(id bigserial, sku int)"
    echo "  Naive: read qty; if it is > 0, write back <qty read> - 1 and record the sale."
    sell last_units_naive.sql
    echo "  concurrency_kit: ck.try_decrement('stock', 1, 'qty', 1) takes a unit only while qty >= 1, in one step."
    sell last_units_ck.sql
}

# Act 2 ------------------------------------------------------------------------------------
lease=2

# stats: the queue's counts, on one line.
stats() {
    sql -c "SELECT format('ready %s, running %s, expired %s, dead %s', ready, running, expired, dead)
            FROM ck.queue_stats('emails')"
}

# claim: claims one job of queue emails; sets id, token and attempt (empty when none was ready).
claim() {
    id='' token='' attempt=''
    read -r id token attempt < <(sql -F ' ' -c "SELECT id, lease_token, attempt FROM ck.claim('emails')") || true
}

complete() { sql -c "SELECT ck.complete('emails', $1, $2)::text"; }   # complete ID TOKEN: true or false

act_crashed_worker() {
    local a_id a_token done_jobs=''
    echo
    echo "Act 2: a worker crashes mid-job"
    echo "  Queue emails, lease $lease seconds, three jobs. ck.claim leases a job under a new token each time;"
    echo "  ck.complete(queue, id, token) finishes it only while that token is current."
    sql -c "SELECT FROM ck.create_queue('emails', lease => '$lease seconds')" \
        -c "SELECT FROM unnest('{ann,bob,cy}'::text[]) AS t, ck.enqueue('emails', jsonb_build_object('to', t))" >/dev/null
    claim    # worker A
    a_id=$id a_token=$token
    echo "    worker A claims job $a_id (attempt $attempt, token $token), then crashes: no complete, no fail"
    claim    # worker B: its first job, then one ck.complete_and_claim per job (hand one in, get the next)
    while [[ -n $id ]]; do
        done_jobs+="${done_jobs:+ and }$id"
        read -r id token attempt < <(sql -F ' ' -c "SELECT id, lease_token, attempt
                                                    FROM ck.complete_and_claim('emails', $id, $token)") || true
    done
    echo "    worker B claims jobs $done_jobs, handing each in and getting the next in one call"
    echo "    (ck.complete_and_claim); then there is nothing more for it: job $a_id is A's"
    echo "    queue: $(stats)"
    echo "  $lease seconds later A's lease has run out."
    sleep "$lease.2"
    echo "    queue: $(stats)"
    claim    # worker B
    echo "    worker B claims job $id again (attempt $attempt, token $token) and completes it: $(complete "$id" "$token")"
    echo "  Worker A comes back and reports on job $a_id with its old token $a_token:"
    echo "    ck.complete -> $(complete "$a_id" "$a_token"), ck.fail -> $(sql -c "SELECT ck.fail('emails', $a_id, $a_token, 'worker A was late')")"
    echo "    ck.complete_and_claim -> $(sql -c "SELECT * FROM ck.complete_and_claim('emails', $a_id, $a_token)" 2>&1 |
                                          sed -n 's/^.*ERROR: *//p') (CK005: what A recorded for the job rolls back)"
    echo "    queue: $(stats)"
    echo "    -> the job was done once, by B; the late worker's acknowledgements changed nothing"
}

# Act 3 ------------------------------------------------------------------------------------

act_locks() {
    echo
    echo "Act 3: exactly one outbox relay"
    echo "  ck.xact_lock('outbox', 7): an advisory lock on (namespace outbox, key 7), released at commit."
    sql -c "SELECT FROM ck.lock_namespace('outbox')"   # registered up front, as a migration would
    psql -X -q -At -d "$PGDATABASE" -c "BEGIN" -c "SELECT ck.xact_lock('outbox', 7)" \
        -c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null &
    sleep 0.5
    psql -X -q -At -d "$PGDATABASE" -c "BEGIN" -c "SELECT ck.xact_lock('outbox', 7)" -c "COMMIT" >/dev/null &
    sleep 0.5
    echo "    relay A holds the lock; relay B waits for it. ck.lock_waits() says:"
    sql -F ' | ' -c "SELECT format('      pid %s waits %s s for %s, blocked by %s: %s', waiting_pid,
                            round(extract(epoch FROM waited)::numeric, 1), lock, blocking_pids, query)
                     FROM ck.lock_waits() WHERE lock LIKE 'advisory%'"
    echo "    relay C will wait at most 300 ms (its own lock_timeout is 10s and stays so):"
    sql -c "SET lock_timeout = '10s'" -c "DO \$\$ BEGIN
                PERFORM ck.xact_lock('outbox', 7, timeout => '300 ms');
            EXCEPTION WHEN OTHERS THEN
                RAISE WARNING '%', format('      %s (SQLSTATE %s -> %s); lock_timeout afterwards: %s',
                    SQLERRM, SQLSTATE, ck.sqlstate_action(SQLSTATE), current_setting('lock_timeout'));
            END \$\$" 2>&1 | sed 's/^WARNING:  //'
    wait
    echo "    -> A relayed, then B; C gave up cleanly and can answer \"busy\""
}

# Act 4 ------------------------------------------------------------------------------------

# go_off_call DOCTOR RUNNER: the doctor leaves the on-call rota if another doctor stays on
# call, deciding on what it read 300 ms earlier (RUNNER: plain, or via ck.retry).
go_off_call() {
    local stmt="UPDATE on_call SET on_duty = false WHERE doctor = '$1'
                AND (SELECT count(*) FROM on_call WHERE on_duty) >= 2 AND pg_sleep(0.3) IS NOT NULL"
    if [[ $2 == plain ]]; then
        psql -X -q -d "$PGDATABASE" -c "$stmt" >/dev/null
    else
        psql -X -q -At -d "$PGDATABASE" -c "CALL ck.retry(\$\$$stmt\$\$, 'serializable')" |
            sed "s/^/      $1 needed /; s/\$/ attempt(s)/"
    fi
}

rota() {   # rota RUNNER: Alice and Bob go off call at the same moment
    sql -c "UPDATE on_call SET on_duty = true"
    go_off_call alice "$1" & go_off_call bob "$1" & wait
    echo "    on call afterwards: $(sql -c "SELECT coalesce(string_agg(doctor, ', '), 'nobody') FROM on_call WHERE on_duty")"
}

act_write_skew() {
    echo
    echo "Act 4: at least one doctor on call (write skew)"
    echo "  Alice and Bob are on call; each asks to go off \"if someone else stays on call\", at the same moment."
    sql -c "CREATE TABLE on_call (doctor text PRIMARY KEY, on_duty boolean NOT NULL)" \
        -c "INSERT INTO on_call VALUES ('alice', true), ('bob', true)"
    echo "  Plain READ COMMITTED: each reads two on call, each updates its own row."
    rota plain
    echo "  CALL ck.retry(..., 'serializable'): the second commit is a serialization failure; its retry reads again."
    rota retry
    echo "    -> the rule over a set of rows holds only when every writer is SERIALIZABLE and retried"
}

# Act 5 ------------------------------------------------------------------------------------

act_guard() {
    echo
    echo "Act 5: no double bookings, by constraint"
    sql -c "CREATE TABLE bookings (id serial PRIMARY KEY, room int NOT NULL, during tstzrange)" \
        -c "INSERT INTO bookings (room, during) VALUES
              (1, '[2026-12-01 09:00, 2026-12-01 10:00)'), (1, '[2026-12-01 10:00, 2026-12-01 11:00)'),
              (2, '[2026-12-01 09:00, 2026-12-01 12:00)'), (1, '[2026-12-01 09:30, 2026-12-01 10:30)')"
    echo "  An exclusion constraint cannot be added NOT VALID, so first the audit, ck.find_overlaps:"
    sql -c "SELECT format('    rows %s and %s, room %s: %s and %s', a, b, key, a_range, b_range)
            FROM ck.find_overlaps('bookings', 'during', '{room}')"
    echo "  The user cancels booking 4 (the 09:30 one), and ck.add_overlap_guard adds the guard:"
    sql -c "DELETE FROM bookings WHERE id = 4"
    sql -c "SELECT ck.add_overlap_guard('bookings', 'during', '{room}')" | sed 's/^/    /'
    echo "  Now two clients book room 1 at 14:00 at the same moment:"
    for who in A B; do
        psql -X -q -d "$PGDATABASE" -c "BEGIN" \
            -c "INSERT INTO bookings (room, during) VALUES (1, '[2026-12-01 14:00, 2026-12-01 15:00)')" \
            -c "SELECT pg_sleep(0.5)" -c "COMMIT" 2>&1 >/dev/null |
            sed -n "s/^ERROR: */    client $who: /p" | head -n 1 &
    done
    wait
    echo "    room 1 bookings at 14:00: $(sql -c "SELECT count(*) FROM bookings WHERE room = 1 AND during @> '2026-12-01 14:30'::timestamptz")"
    echo "    -> the second client waited for the first and got 23P01 (-> $(sql -c "SELECT ck.sqlstate_action('23P01')")): nothing to retry, nothing double-booked"
}

# Act 6 ------------------------------------------------------------------------------------

# Finding the bug before it ships: act 1's naive seller again, with the race detector on in its sessions.
act_detector() {
    local reported kept
    echo
    echo "Act 6: finding the naive seller before it ships (ck.race_detector)"
    echo "  Act 1's clients again, each session with SET ck.race_detector = 'log' (or 'warning', 'error'):"
    sql -c "SELECT ck.race_reports_reset()" >/dev/null
    PGOPTIONS="$PGOPTIONS -c ck.race_detector=log" sell last_units_naive.sql
    kept=$(sql -c "SELECT count(*) FROM ck.race_reports()")
    echo "    ck.race_reports holds the latest $kept reports (it keeps 128); the oldest of them:"
    sql -c "SELECT format('      %s %s: read \"%s\", then \"%s\" overwrote %s',
                   table_name, row_key, read_statement, write_statement, overwritten)
            FROM ck.race_reports() ORDER BY reported_at LIMIT 1"
    sql -c "SELECT ck.race_reports_reset()" >/dev/null
    echo "  The same crowd with ck.try_decrement, detector on:"
    PGOPTIONS="$PGOPTIONS -c ck.race_detector=log" sell last_units_ck.sql
    reported=$(sql -c "SELECT count(*) FROM ck.race_reports()")
    echo "    the detector reported $reported lost updates"
    echo "    -> turn it on in a test suite or on staging: every read-then-overwrite that lost a change is named"
}

echo "concurrency_kit demo: what goes wrong when many clients write at once, and the fix"
dropdb --if-exists ck_demo
createdb ck_demo
sql -c "CREATE EXTENSION concurrency_kit"
act_last_units
act_crashed_worker
act_locks
act_write_skew
act_guard
act_detector
