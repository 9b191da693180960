#!/usr/bin/env bash
# test/package/install_check.sh MAJOR PORT DEB OLD: run as root inside a clean root of the major's suite (the server
# package and nothing else; test/package/run.sh makes it): what a user of the package goes through. The older
# release built from source (OLD, a DESTDIR tree) makes a database with a queue; the package is installed with apt
# while the server runs; a new database gets the extension and a queue smoke test; the old one is updated with its
# jobs kept; the package is removed with the server still running. Prints TAP lines.
set -uo pipefail
major=$1 port=$2 deb=$3 old=$4
bin=/usr/lib/postgresql/$major/bin
data=/tmp/ck-package-data
n=0
tap() { # tap OK DESCRIPTION
    n=$((n + 1))
    if [[ $1 == 0 ]]; then echo "ok $n - PostgreSQL $major: $2"; else echo "not ok $n - PostgreSQL $major: $2"; fi
}
as_postgres() { runuser -u postgres -- "$@"; }
# sql DB STATEMENT: one value, unaligned; errors to stdout (prefixed ERROR) for the checks to see.
sql() { as_postgres "$bin/psql" -X -q -At -v ON_ERROR_STOP=1 -h /tmp -p "$port" -d "$1" -c "$2" 2>&1; }
# expect WHAT OUTPUT WANT: a TAP line comparing OUTPUT's last line (psql shows every statement's result) with WANT.
expect() {
    local last=${2##*$'\n'}
    tap $([[ $last == "$3" ]]; echo $?) "$1"
    [[ $last == "$3" ]] || { printf '%s\n' "$2" | sed 's/^/# /'; echo "# want: $3"; }
}

cp -a "$old/." /
version=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "/usr/share/postgresql/$major/extension/concurrency_kit.control")
tap $([[ -f /usr/lib/postgresql/$major/lib/concurrency_kit.so ]]; echo $?) "the older release ($version) installed from source"

rm -rf "$data"
as_postgres "$bin/initdb" -D "$data" -A trust -U postgres >/tmp/initdb.log 2>&1 &&
    as_postgres "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w start \
        -o "-p $port -k /tmp -c listen_addresses=127.0.0.1" >/dev/null
tap $? "a cluster runs on 127.0.0.1:$port"
postmaster=$(head -n 1 "$data/postmaster.pid" 2>/dev/null)

sql postgres 'CREATE DATABASE old' >/dev/null
expect "the older release makes a queue of 10 jobs and leases one" "$(sql old "
    CREATE EXTENSION concurrency_kit VERSION '$version';
    SELECT ck.create_queue('emails');
    SELECT count(ck.enqueue('emails', jsonb_build_object('n', i))) FROM generate_series(1, 10) i;
    SELECT count(*) FROM ck.claim('emails', lease => '1 hour');
    SELECT count(*) || ' jobs, ' || count(*) FILTER (WHERE lease_token IS NOT NULL) || ' leased' FROM emails")" \
    "10 jobs, 1 leased"

DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" >/tmp/apt-install.log 2>&1
tap $? "apt install $(basename "$deb") while the server runs"
grep -E '^(E|W):' /tmp/apt-install.log | sed 's/^/# /'

sql postgres 'CREATE DATABASE fresh' >/dev/null
expect "CREATE EXTENSION from the package; a queue's job enqueued, claimed and completed" "$(sql fresh "
    CREATE EXTENSION concurrency_kit;
    SELECT ck.create_queue('jobs');
    SELECT ck.enqueue('jobs', '{\"to\": \"ann\"}');
    SELECT ck.complete('jobs', id, lease_token) FROM ck.claim('jobs');
    SELECT extversion || ', ' || (SELECT count(*) FROM jobs) || ' jobs left' FROM pg_extension
    WHERE extname = 'concurrency_kit'")" "1.1.0, 0 jobs left"

expect "ALTER EXTENSION concurrency_kit UPDATE keeps the older release's jobs and its lease" "$(sql old "
    ALTER EXTENSION concurrency_kit UPDATE;
    SELECT extversion || ', ' || (SELECT count(*) FROM emails) || ' jobs, '
        || (SELECT count(*) FROM emails WHERE lease_token IS NOT NULL) || ' leased'
    FROM pg_extension WHERE extname = 'concurrency_kit'")" "1.1.0, 10 jobs, 1 leased"
expect "the updated queue's 9 free jobs are claimed and completed with the 1.0 calls" "$(sql old "
    SELECT count(*) FILTER (WHERE ck.complete('emails', id, lease_token)) FROM ck.claim('emails', 100)")" "9"

DEBIAN_FRONTEND=noninteractive apt-get remove -y -q "$(dpkg-deb -f "$deb" Package)" >/tmp/apt-remove.log 2>&1
tap $? "apt remove while the server runs"
expect "after the removal the server runs on (the same postmaster) and a call is a clear error" "$(sql fresh "
    SELECT ck.enqueue('jobs', '{}')" | head -n 1 | sed 's/could not access file .*/could not access file/')" \
    "ERROR:  could not access file"
expect "... the same postmaster, which no backend crash restarted" \
    "$(head -n 1 "$data/postmaster.pid"), $(grep -c 'terminated by signal' "$data/server.log")" "$postmaster, 0"

expect "DROP EXTENSION needs no file of the removed package; the queue table stays" "$(sql fresh "
    DROP EXTENSION concurrency_kit CASCADE;
    SELECT (SELECT count(*) FROM pg_extension WHERE extname = 'concurrency_kit') || ' left, ' || to_regclass('jobs')")" \
    "0 left, jobs"

as_postgres "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
tap $? "the cluster stops"
