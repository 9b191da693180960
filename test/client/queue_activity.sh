#!/usr/bin/env bash
# ck.queue_activity and ck.queue_stats as a Prometheus user reads them: prometheus-postgres-exporter with the
# query file the extension ships (sql/postgres_exporter_queries.yaml) reports the counters the calls made, and
# the current counts. The counters work with the library preloaded or not (0.4.0: without a preload the first
# use of a queue makes the shared state they live in); make test runs this in both configurations, and each
# call below is a backend of its own, so the counts are the shared ones. Prints TAP.
# needs: prometheus-postgres-exporter curl python3   (test/run.sh skips this suite where one is missing)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
queries=$here/../../sql/postgres_exporter_queries.yaml
db=ck_activity
exporter=
cleanup() {
    [[ -z $exporter ]] || kill "$exporter" 2>/dev/null || true
    dropdb --if-exists "$db" >/dev/null 2>&1 || true
}
trap cleanup EXIT
dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
sql() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
sql -c "CREATE EXTENSION concurrency_kit" -c "SELECT FROM ck.create_queue('mail')"

n=0
check() {  # check DESCRIPTION COMMAND...
    n=$((n + 1))
    if "${@:2}"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}

preload=$(sql -c "SHOW shared_preload_libraries")
echo "# shared_preload_libraries: '$preload'"

# The day's work on queue mail: 3 jobs in (one with a unique key, refused once more), 2 claimed, one completed
# (and its acknowledgement repeated: lost), one failed (retried later), the third cancelled while waiting.
sql >/dev/null <<'SQL'
SELECT ck.enqueue('mail'), ck.enqueue('mail'), ck.enqueue('mail', unique_key => 'welcome');
SELECT ck.enqueue('mail', unique_key => 'welcome');
CREATE TABLE leased AS SELECT id, lease_token, row_number() OVER (ORDER BY id) AS n FROM ck.claim('mail', 2);
SELECT ck.complete('mail', id, lease_token) FROM leased WHERE n = 1;
SELECT ck.try_complete('mail', id, lease_token) FROM leased WHERE n = 1;
SELECT ck.fail('mail', id, lease_token, 'smtp down', '1 hour') FROM leased WHERE n = 2;   -- scheduled well past the checks
SELECT ck.cancel('mail', id) FROM mail WHERE unique_key = 'welcome';
SQL

# The counters as SQL reads them, before the exporter does.
counts=$(sql -F ' ' -c "SELECT enqueued, claimed, completed, failed, retried, buried, cancelled, lost_acks, duplicates
                       FROM ck.queue_activity() WHERE queue = 'mail'::regclass" 2>&1 || true)
# enqueued claimed completed failed retried buried cancelled lost_acks duplicates
check "ck.queue_activity counts the day's work on mail, preloaded or not ('$preload'): 3 2 1 1 1 0 1 1 1 (got ${counts:-no row})" \
    test "$counts" = "3 2 1 1 1 0 1 1 1"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
DATA_SOURCE_NAME="host=$PGHOST port=$PGPORT user=${PGUSER:-postgres} dbname=$db sslmode=disable" \
    prometheus-postgres-exporter --web.listen-address="127.0.0.1:$port" --extend.query-path="$queries" \
    --disable-default-metrics --disable-settings-metrics >"$log" 2>&1 &
exporter=$!
scrape() { curl -sf "http://127.0.0.1:$port/metrics"; }
for _ in $(seq 100); do
    scrape >/dev/null 2>&1 && break
    sleep 0.1
done
metrics=$(scrape || true)

# metric NAME: the value of NAME for queue mail in the last scrape (empty when absent).
metric() {
    awk -v name="$1" '$1 ~ "^" name "\\{" && $1 ~ /queue="mail"/ { print $2 + 0 }' <<<"$metrics"
}
check "the exporter serves the shipped query file's metrics" test -n "$(metric ck_queue_activity_enqueued)"
for expect in enqueued=3 claimed=2 completed=1 failed=1 retried=1 buried=0 cancelled=1 lost_acks=1 duplicates=1; do
    name=${expect%%=*}
    got=$(metric "ck_queue_activity_$name")
    check "ck_queue_activity_$name for mail is ${expect#*=} (got ${got:-nothing})" test "$got" = "${expect#*=}"
done
check "the counters are Prometheus counters (# TYPE ... counter)" \
    grep -q '^# TYPE ck_queue_activity_claimed counter' <<<"$metrics"
read -r ready scheduled running expired dead <<<"$(sql -F ' ' -c "SELECT ready, scheduled, running, expired, dead FROM ck.queue_stats('mail')")"
for expect in ready="$ready" scheduled="$scheduled" running="$running" expired="$expired" dead="$dead"; do
    name=${expect%%=*}
    got=$(metric "ck_queue_stats_$name")
    check "ck_queue_stats_$name for mail is what ck.queue_stats says (${expect#*=}, got ${got:-nothing})" \
        test "$got" = "${expect#*=}"
done
check "ck_queue_stats_dead counts the cancelled job's dead letter (1)" test "$dead" = 1

# The next scrape sees the next commit; a rolled-back claim is not counted.
sql -c "BEGIN" -c "SELECT count(*) FROM ck.claim('mail', 5)" -c "ROLLBACK" >/dev/null
sql -c "SELECT ck.enqueue('mail')" -c "SELECT count(*) FROM ck.claim('mail', 1)" >/dev/null
metrics=$(scrape || true)
check "the next scrape counts the new enqueue and claim, not the rolled-back claim (enqueued 4, claimed 3)" \
    test "$(metric ck_queue_activity_enqueued) $(metric ck_queue_activity_claimed)" = "4 3"
# (Newer exporters warn at level WARN that they found no postgres_exporter.yml: not an error.)
check "the exporter logged no error for the queries" bash -c "! grep -qi 'level=error' '$log'"
grep -qi 'level=error' "$log" && sed 's/^/# /' "$log"
rm -f "$log"
echo "1..$n"
