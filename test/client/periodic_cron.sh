#!/usr/bin/env bash
# Periodic jobs with pg_cron (the README's pattern): a cron entry enqueues with a per-tick unique
# key and a window, so a tick that runs twice -- two entries with the same command here, as after a
# duplicated schedule or a second scheduler -- enqueues one job, and a run of the same tick after
# that job is done enqueues nothing; a dump and restore of the database keeps the windows, so the
# restored copy does not enqueue the tick again. pg_cron must be preloaded: this runs on a cluster of
# its own (port PGPORT + 10002, data and socket in a temporary directory, run as postgres when run
# by root, always stopped). pg_cron runs its jobs in background workers, in the database ck_app.
# Prints TAP.
# needs: pg_cron   (test/run.sh skips this suite where one is missing)
set -euo pipefail
source "$(dirname "$0")/lib/tap.sh"

port=$((PGPORT + 10002))
((port <= 65535)) || port=$((PGPORT - 10002))
tmp=$(mktemp -d /tmp/ck_cron.XXXXXX)
bindir=$("${PG_CONFIG:-pg_config}" --bindir)
as_server_user() {
    if [[ $EUID -eq 0 ]]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}
cleanup() {
    if [[ -f $tmp/data/postmaster.pid ]]; then
        as_server_user "$bindir/pg_ctl" -D "$tmp/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$tmp" "$tap_dir"
}
trap cleanup EXIT
trap 'exit 129' HUP PIPE; trap 'exit 130' INT; trap 'exit 143' TERM

[[ $EUID -ne 0 ]] || chown postgres: "$tmp"
if as_server_user "$bindir/initdb" -D "$tmp/data" -U postgres -A trust >"$tmp/initdb.log" 2>&1 &&
    as_server_user "$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w start -o "-p $port -c listen_addresses= \
        -c unix_socket_directories=$tmp -c shared_preload_libraries=pg_cron,concurrency_kit \
        -c cron.use_background_workers=on -c max_worker_processes=16 -c cron.database_name=postgres" >/dev/null; then
    ok "cron: a cluster with pg_cron and concurrency_kit preloaded runs on port $port"
else
    not_ok "cron: a cluster with pg_cron and concurrency_kit preloaded runs on port $port"
    sed 's/^/# /' "$tmp/initdb.log" "$tmp/server.log" 2>/dev/null | tail -n 20
    tap_done
    exit 1
fi
db() { psql -X -q -At -v ON_ERROR_STOP=1 -h "$tmp" -p "$port" -U postgres -d "$1" "${@:2}"; }
app() { db ck_app "$@"; }
check_app() {  # check_app DESCRIPTION SQL: ok when SQL returns t in ck_app
    local got
    got=$(app -c "$2" 2>&1) || true
    if [[ $got == t ]]; then ok "$1"; else not_ok "$1"; echo "# got: ${got//$'\n'/ }"; fi
}

# The tick: one job per minute, its key the minute, taken for a day.
tick="SELECT ck.enqueue('reports', jsonb_build_object('kind', 'hourly report'),
        unique_key => 'report:' || to_char(date_trunc('minute', now()), 'YYYY-MM-DD HH24:MI'),
        unique_for => '1 day')"
db postgres -c "CREATE DATABASE ck_app"
app -c "CREATE EXTENSION concurrency_kit" -c "SELECT FROM ck.create_queue('reports')"
db postgres -c "CREATE EXTENSION pg_cron"
# Every 2 seconds where pg_cron has second schedules (1.5+), else at the start of every minute.
schedule='2 seconds'
db postgres -c "SELECT cron.unschedule(cron.schedule('probe', '2 seconds', 'SELECT 1'))" >/dev/null 2>&1 ||
    schedule='* * * * *'
for entry in tick_a tick_b; do
    db postgres -c "SELECT cron.schedule_in_database('$entry', '$schedule', \$cmd\$$tick\$cmd\$, 'ck_app')" >/dev/null
done

# Both entries have run (each at least once; every 2 s, or at the next minute).
runs() {
    db postgres -c "SELECT count(DISTINCT j.jobname) = 2 AND count(*) FILTER (WHERE d.status <> 'succeeded') = 0
                    FROM cron.job_run_details AS d JOIN cron.job AS j USING (jobid) WHERE d.status IN ('succeeded', 'failed')"
}
for _ in $(seq 150); do
    [[ $(runs) == t ]] && break
    sleep 0.5
done
if [[ $(runs) == t ]]; then
    ok "cron: both entries ran the tick (schedule '$schedule'), every run succeeded"
else
    not_ok "cron: both entries ran the tick (schedule '$schedule'), every run succeeded"
    db postgres -c "SELECT jobid, status, return_message FROM cron.job_run_details" | sed 's/^/# /'
fi
db postgres -c "SELECT cron.unschedule(jobname) FROM cron.job" >/dev/null
for _ in $(seq 20); do   # a run under way finishes
    [[ $(db postgres -c "SELECT count(*) FROM cron.job_run_details WHERE status IN ('starting', 'running')") == 0 ]] && break
    sleep 0.2
done
ran=$(db postgres -c "SELECT count(*) FROM cron.job_run_details WHERE status = 'succeeded'")
check_app "cron: $ran runs of the tick made one job per minute key: as many jobs as windows, one per key" "
    SELECT count(*) = count(DISTINCT unique_key) AND count(*) = (SELECT count(*) FROM ck.unique_windows)
           AND count(*) BETWEEN 1 AND $ran - 1
    FROM reports"

# A worker does the jobs; then the tick runs again for each minute it served: nothing is enqueued.
app -c "SELECT count(ck.complete('reports', id, lease_token)) FROM ck.claim('reports', 100)" >/dev/null
check_app "cron: every job of the ticks is done" "SELECT count(*) = 0 FROM reports"
check_app "cron: the same ticks run again after their jobs are done enqueue nothing (the window holds the key)" "
    SELECT bool_and(ck.enqueue('reports', '{}', unique_key => w.unique_key, unique_for => '1 day') = w.job)
           AND (SELECT count(*) FROM reports) = 0
    FROM ck.unique_windows AS w"

# A backup restored elsewhere (pg_dump, pg_restore into a new database): the windows come with it
# (ck.unique_windows is a configuration table of the extension), so the tick does not run twice.
if as_server_user "$bindir/pg_dump" -h "$tmp" -p "$port" -U postgres -Fc -f "$tmp/app.dump" ck_app &&
    db postgres -c "CREATE DATABASE ck_app_restored" &&
    as_server_user "$bindir/pg_restore" -h "$tmp" -p "$port" -U postgres -d ck_app_restored "$tmp/app.dump"; then
    ok "cron: pg_dump of ck_app restores into ck_app_restored"
else
    not_ok "cron: pg_dump of ck_app restores into ck_app_restored"
fi
got=$(db ck_app_restored -c "
    SELECT count(*) > 0 AND bool_and(ck.enqueue('reports', '{}', unique_key => w.unique_key, unique_for => '1 day') = w.job)
           AND (SELECT count(*) FROM reports) = 0
    FROM ck.unique_windows AS w" 2>&1) || true
if [[ $got == t ]]; then
    ok "cron: in the restored copy the windows hold: the ticks enqueue nothing again"
else
    not_ok "cron: in the restored copy the windows hold: the ticks enqueue nothing again"
    echo "# got: ${got//$'\n'/ }"
fi
tap_done
