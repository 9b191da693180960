#!/usr/bin/env bash
# Read replicas: a hot standby of the test cluster (pg_basebackup -R, streaming), and which
# functions run there. The read-only ones work on the standby; the ones that write must run on
# the primary and fail with 25006; advisory locks taken on the standby are the standby's own and
# do not exclude holders on the primary. The standby listens on 127.0.0.1, port PGPORT + 10001,
# with its data and socket in a temporary directory, runs as postgres when run by root, and is
# always stopped. Prints TAP.
set -euo pipefail
source "$(dirname "$0")/lib/tap.sh"

db=ck_standby
sport=$((PGPORT + 10001))
((sport <= 65535)) || sport=$((PGPORT - 10001))
tmp=$(mktemp -d /tmp/ck_standby.XXXXXX)
pg_ctl=$(command -v pg_ctl)
holder=

as_server_user() {
    if [[ $EUID -eq 0 ]]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}
cleanup() {
    [[ -z $holder ]] || kill "$holder" 2>/dev/null || true
    if [[ -f $tmp/data/postmaster.pid ]]; then
        as_server_user "$pg_ctl" -D "$tmp/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    drop_db "$db"
    rm -rf "$tmp" "$tap_dir"
}
trap cleanup EXIT
trap 'exit 129' HUP PIPE; trap 'exit 130' INT; trap 'exit 143' TERM

# On the primary, before the base backup: a queue with 3 ready jobs, a table, a registered namespace.
export PGDATABASE=$db
drop_db "$db"
createdb "$db"
sql >/dev/null <<'SQL'
CREATE EXTENSION concurrency_kit;
SELECT ck.create_queue('jobs');
SELECT ck.enqueue('jobs', '{}') FROM generate_series(1, 3);
CREATE TABLE stock (sku int PRIMARY KEY, qty int NOT NULL);
INSERT INTO stock VALUES (1, 5);
CREATE TABLE bookings (room int NOT NULL, during int4range NOT NULL);
INSERT INTO bookings VALUES (1, '[1,5)'), (1, '[3,8)');
CREATE TABLE visits (room int NOT NULL, during int4range NOT NULL);
INSERT INTO visits VALUES (1, '[1,3)');
SELECT ck.lock_namespace('relay');
SQL

if pg_isready -q -h 127.0.0.1 -p "$sport" || [[ $? -eq 1 ]]; then
    not_ok "standby: port $sport is free"
    tap_done
    exit 1
fi
[[ $EUID -ne 0 ]] || chown postgres: "$tmp"
if as_server_user "$(command -v pg_basebackup)" -h 127.0.0.1 -p "$PGPORT" -U postgres -D "$tmp/data" -R -X stream \
        -c fast >"$tmp/basebackup.log" 2>&1 &&
    as_server_user "$pg_ctl" -D "$tmp/data" -l "$tmp/standby.log" -w start \
        -o "-p $sport -c listen_addresses=127.0.0.1 -c unix_socket_directories=$tmp -c hot_standby=on" >/dev/null &&
    [[ $(psql -X -At -h "$tmp" -p "$sport" -U postgres -d "$db" -c 'SELECT pg_is_in_recovery()') == t ]]; then
    ok "standby: a hot standby of the test cluster (pg_basebackup -R) runs on port $sport, in recovery"
else
    not_ok "standby: a hot standby of the test cluster (pg_basebackup -R) runs on port $sport, in recovery"
    sed 's/^/# /' "$tmp/basebackup.log" "$tmp/standby.log" 2>/dev/null | tail -n 20
    tap_done
    exit 1
fi

standby() { psql -X -q -At -v ON_ERROR_STOP=1 -h "$tmp" -p "$sport" -U postgres -d "$db" "$@"; }

# on_standby DESCRIPTION EXPECTED SQL...: the SQLs (one psql -c each, one session) run on the
# standby and print EXPECTED (empty lines, as void results print, left out).
on_standby() {
    local got args=() q
    for q in "${@:3}"; do args+=(-c "$q"); done
    got=$(standby "${args[@]}" 2>&1 | sed '/^$/d') || true
    if [[ $got == "$2" ]]; then ok "standby: $1"; else not_ok "standby: $1"; echo "# got: ${got//$'\n'/ | }"; fi
}
# refused DESCRIPTION SQL SQLSTATE: SQL fails on the standby with SQLSTATE.
refused() {
    local got
    got=$(standby -v VERBOSITY=verbose -c "$2" 2>&1) || true
    if [[ $got == *"ERROR:  $3:"* ]]; then ok "standby: $1"; else not_ok "standby: $1"; echo "# got: ${got//$'\n'/ | }"; fi
}

on_standby "ck.queue_stats reads the replicated queue" "(3,0,0,0,0)" \
    "SELECT (ready, scheduled, running, expired, dead) FROM ck.queue_stats('jobs')"
on_standby "ck.find_overlaps audits the replicated rows" "1" \
    "SELECT count(*) FROM ck.find_overlaps('bookings', 'during', '{room}')"
on_standby "ck.volatility_audit, ck.scan_check, ck.overlap_guard_ddl, ck.unique_guard_ddl, ck.sqlstate_action run" "t" "
    SELECT (SELECT count(*) FROM ck.volatility_audit()) >= 0
       AND (SELECT count(*) FROM ck.scan_check('SELECT * FROM stock WHERE qty = 1')) = 1
       AND ck.overlap_guard_ddl('bookings', 'during', '{room}') LIKE '%EXCLUDE USING gist%'
       AND ck.unique_guard_ddl('stock', '{qty}') LIKE 'CREATE UNIQUE INDEX CONCURRENTLY%'
       AND ck.sqlstate_action('40001') = 'retry'"
on_standby "ck.lock_namespace of a registered name gives the primary's number" "t" \
    "SELECT ck.lock_namespace('relay') = $(sql -c "SELECT ck.lock_namespace('relay')")"
on_standby "ck.xact_lock, ck.session_lock, ck.session_unlock, ck.held_locks and ck.lock_waits run" \
    "relay:1 transaction, relay:2 session
0
relay:2 session
0" \
    "BEGIN" "SELECT ck.xact_lock('relay', 1, '1 second')" "SELECT ck.session_lock('relay', 2)" \
    "SELECT string_agg(format('%s:%s %s', ns_name, key, scope), ', ' ORDER BY key) FROM ck.held_locks()" \
    "SELECT count(*) FROM ck.lock_waits()" "COMMIT" \
    "SELECT string_agg(format('%s:%s %s', ns_name, key, scope), ', ' ORDER BY key) FROM ck.held_locks()" \
    "SELECT ck.session_unlock('relay', 2)" "SELECT count(*) FROM ck.held_locks()"
on_standby "CALL ck.retry runs read-only statements at REPEATABLE READ and READ COMMITTED" "1
1" \
    "CALL ck.retry('SELECT count(*) FROM stock', 'repeatable read')" \
    "CALL ck.retry('SELECT count(*) FROM stock', 'read committed')"
refused "CALL ck.retry at its default SERIALIZABLE: 0A000 (no serializable mode in a hot standby)" \
    "CALL ck.retry('SELECT count(*) FROM stock')" 0A000
for call in "ck.try_decrement('stock', 1, 'qty', 1)" "ck.decrement('stock', 1, 'qty', 1)" \
    "ck.try_increment('stock', 1, 'qty', 1, 10)" "ck.try_transition('stock', 1, 'qty', '5', '4')" \
    "ck.try_update_if_version('stock', 1, 5, '{}', 'qty')" "ck.lock_rows('stock', ARRAY[1])" \
    "ck.enqueue('jobs')" "ck.claim('jobs')" "ck.claim_wait('jobs', 1, NULL, '100 ms')" "ck.complete('jobs', 1, 1)" \
    "ck.fail('jobs', 1, 1)" "ck.extend_lease('jobs', 1, 1, '1 minute')" "ck.purge_dead('jobs', '1 day')" \
    "ck.create_queue('other')" "ck.lock_namespace('a_new_name')" "ck.add_overlap_guard('visits', 'during', '{room}')"; do
    refused "$call must run on the primary: 25006" "SELECT * FROM $call" 25006
done

# A lock held on the primary does not exclude the same key on the standby.
psql -X -q -At -c "SELECT ck.session_lock('relay', 9)" -c "SELECT pg_sleep(10)" >/dev/null 2>&1 &
holder=$!
for _ in $(seq 100); do
    [[ $(sql -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = 9") == 1 ]] && break
    sleep 0.05
done
# (each probe in a transaction block, where a transaction lock belongs)
got=$(sql -c "BEGIN" -c "SELECT NOT ck.try_xact_lock('relay', 9)" -c "COMMIT" 2>&1) || true
if [[ $got == t ]]; then ok "primary: relay:9 is held there (ck.try_xact_lock says false)"
else not_ok "primary: relay:9 is held there (ck.try_xact_lock says false)"; echo "# got: ${got//$'\n'/ }"; fi
on_standby "... but free on the standby: advisory locks are per server" "t" \
    "BEGIN" "SELECT ck.try_xact_lock('relay', 9)" "COMMIT"
kill "$holder" 2>/dev/null || true
holder=
tap_done
