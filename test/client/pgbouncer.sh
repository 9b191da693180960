#!/usr/bin/env bash
# PgBouncer (Debian's pgbouncer, 1.18) in transaction pooling mode in front of the test cluster: the
# README's three workers as they are (test/client/python/worker.py with psycopg's
# prepare_threshold=None, go/worker/main.go with pgx's statement_cache_mode=describe, node/worker.js
# with node-postgres as it comes: short_worker, paused and resumed while a producer awaits a job), 4
# workers each over 2 server connections, and the Python and Go ones failing without their setting; the
# larger Go worker's parts (queue, decrement, xact-lock, retry, unique, dependencies, optimistic) with 8
# client connections over 3 server connections (pgx with statement_cache_mode=describe), and the larger
# Node worker's with nothing set; then one test per finding: prepared statements of pgx and psycopg
# fail, the settings that avoid them work (pgx's prefer_simple_protocol cannot send a map payload),
# ck.session_lock leaks (and works through a session-mode pool), per-backend caches stay right when a
# client's transactions move between server connections.
# PgBouncer listens on 127.0.0.1 only, port PGPORT + 10000, runs as postgres when run by root,
# keeps config, pid and log in a temporary directory, and is always stopped. Prints TAP.
# needs: pgbouncer go pgx node npm psycopg   (test/run.sh skips this suite where one is missing)
set -euo pipefail
source "$(dirname "$0")/lib/tap.sh"

db=ck_bouncer
node_db=ck_bouncer_node
server_conns=3
tmp=$(mktemp -d /tmp/ck_pgbouncer.XXXXXX)
source "$(dirname "$0")/../bouncer.sh"
bport=$(bouncer_port)
cleanup() {
    bouncer_stop
    drop_db "$db"
    drop_db "$node_db"
    for lang in python go node; do drop_db "ck_short_$lang"; done
    rm -rf "$tmp" "$tap_dir"
}
trap cleanup EXIT
trap 'exit 129' HUP PIPE; trap 'exit 130' INT; trap 'exit 143' TERM

if build_go "$tmp/ckworker" "$tmp" 2>"$tmp/build.log"; then
    ok "pgbouncer: the Go worker builds"
else
    not_ok "pgbouncer: the Go worker builds"
    sed 's/^/# /' "$tmp/build.log"
fi
setup_db "$db" 2000
setup_db "$node_db" 500
export PGDATABASE=$db

if bouncer_start "$tmp" "$bport" "$server_conns" 200 \
        "$db = host=127.0.0.1 port=$PGPORT dbname=$db user=postgres" \
        "${db}_session = host=127.0.0.1 port=$PGPORT dbname=$db user=postgres pool_mode=session" \
        "$node_db = host=127.0.0.1 port=$PGPORT dbname=$node_db user=postgres" \
        "ck_short_python = host=127.0.0.1 port=$PGPORT dbname=ck_short_python user=postgres pool_size=2" \
        "ck_short_go = host=127.0.0.1 port=$PGPORT dbname=ck_short_go user=postgres pool_size=2" \
        "ck_short_node = host=127.0.0.1 port=$PGPORT dbname=ck_short_node user=postgres pool_size=2" >"$tmp/start.log" 2>&1; then
    ok "pgbouncer: $("$bouncer_bin" --version | head -n 1) in transaction mode on 127.0.0.1:$bport, $server_conns server connections per pool"
else
    not_ok "pgbouncer: started in transaction mode on 127.0.0.1:$bport"
    sed 's/^/# /' "$tmp/start.log"
    tap_done
    exit 1
fi
bouncer="host=127.0.0.1 port=$bport user=postgres"

# 0. The README's workers, exactly as they are, with the driver settings their code holds; a database
# each (short_db), so that no pooled server connection outlives its database.
# shared_servers LABEL: the worker's connections went through PgBouncer (server connections come over TCP,
# the checks' own over the socket) and shared its 2 server connections.
shared_servers() {
    local servers
    servers=$(sql -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$short_db' AND client_addr IS NOT NULL")
    if ((servers >= 1 && servers <= 2)); then
        ok "$1: its 4 workers' connections went through PgBouncer and shared $servers server connections"
    else
        not_ok "$1: its 4 workers' connections went through PgBouncer and shared at most 2 server connections ($servers)"
    fi
}
through="PGHOST=127.0.0.1 PGPORT=$bport"
short_db=ck_short_python
short_worker "python README worker through pgbouncer" "$through" /usr/bin/python3 "$client_dir/python/worker.py"
shared_servers "python README worker through pgbouncer"
if build_short_go "$tmp/short" 2>"$tmp/short-build.log"; then
    short_db=ck_short_go
    short_worker "go README worker through pgbouncer" "$through" "$tmp/short/worker"
    shared_servers "go README worker through pgbouncer"
else
    not_ok "pgbouncer: the README's Go worker builds with the command in its header"
    sed 's/^/# /' "$tmp/short-build.log"
fi

# without_setting LABEL DB ORIGINAL COPY CMD...: the same worker with its driver setting taken out (COPY:
# ORIGINAL edited, which CMD runs), on 300 new jobs behind PgBouncer. Before 1.24 it must fail (exit status
# not 0, a prepared statement error printed): the setting the README names is what makes it work. From 1.24
# PgBouncer tracks prepared statements and it must work without the setting, as the README says.
without_setting() {
    local label=$1 db=$2 status=0
    if bouncer_tracks_prepared; then
        label="${label% fails}, works on PgBouncer 1.24+"
    fi
    if cmp -s "$3" "$4"; then
        not_ok "$label: the setting to take out was not found in $3"
        return 0
    fi
    shift 4
    sql -d "$db" -c "SELECT count(ck.enqueue('emails', jsonb_build_object('to', 'again' || g || '@example.com')))
                     FROM generate_series(1, 300) AS g" >/dev/null
    PGHOST=127.0.0.1 PGPORT=$bport PGDATABASE=$db timeout -k 5 60 "$@" >"$tmp/without.out" 2>&1 || status=$?
    if bouncer_tracks_prepared; then
        if ((status == 0)) && [[ $(sql -d "$db" -c "SELECT count(*) FROM emails") == 0 ]] &&
            ! grep -q 'prepared statement' "$tmp/without.out"; then
            ok "$label (exit 0, the 300 jobs done)"
        else
            not_ok "$label (exit $status)"
            tail -n 5 "$tmp/without.out" | sed 's/^/# /'
        fi
        return 0
    fi
    if ((status != 0 && status != 124)) && grep -q 'prepared statement .* \(does not\|already\) exist\|26000\|42P05' "$tmp/without.out"; then
        ok "$label (exit $status: $(grep -o -m 1 'prepared statement [^ ]* [a-z ]*exist[s]*' "$tmp/without.out"))"
    else
        not_ok "$label (exit $status)"
        tail -n 5 "$tmp/without.out" | sed 's/^/# /'
    fi
}
sed 's/, prepare_threshold=None)/)/' "$client_dir/python/worker.py" >"$tmp/worker_default.py"
without_setting "pgbouncer: the README's Python worker without prepare_threshold=None fails" ck_short_python \
    "$client_dir/python/worker.py" "$tmp/worker_default.py" /usr/bin/python3 "$tmp/worker_default.py"
if [[ -f $tmp/short/main.go ]] && mkdir -p "$tmp/default" &&
    sed 's/"statement_cache_mode=describe /"/' "$client_dir/go/worker/main.go" >"$tmp/default/main.go" &&
    (cd "$tmp/default" && GO111MODULE=off GOPROXY=off GOPATH=/usr/share/gocode go build -o worker main.go) 2>"$tmp/default/build.log"; then
    without_setting "pgbouncer: the README's Go worker without statement_cache_mode=describe fails" ck_short_go \
        "$client_dir/go/worker/main.go" "$tmp/default/main.go" "$tmp/default/worker"
else
    not_ok "pgbouncer: the README's Go worker without statement_cache_mode=describe builds"
fi
npm_ok=false
if (cd "$client_dir/node" && npm ci --no-audit --no-fund --prefer-offline >"$tmp/npm.log" 2>&1); then
    npm_ok=true
    short_db=ck_short_node
    short_worker "node README worker through pgbouncer" "$through" node "$client_dir/node/worker.js"
    shared_servers "node README worker through pgbouncer"
fi
export PGDATABASE=$db

# 1. What works unchanged (given a driver that does not prepare named statements): the Go worker.
if [[ -x $tmp/ckworker ]]; then
    tap_prefix="through pgbouncer, "
    run_tap "go worker through pgbouncer" 150 "$tmp/ckworker" -workers 8 \
        -parts queue,decrement,lock,retry,unique,dependencies,optimistic \
        -dsn "$bouncer dbname=$db statement_cache_mode=describe"
    clients=$(sed -n 's/^# client connections: \([0-9]*\)$/\1/p' "$tap_dir/last.out")
    servers=$(sql -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db' AND client_addr IS NOT NULL")
    if ((${clients:-0} > servers && servers > 0 && servers <= server_conns)); then
        ok "pgbouncer: the Go pool's ${clients:-0} client connections shared $servers server connections"
    else
        not_ok "pgbouncer: the Go pool's ${clients:-0} client connections shared $servers server connections (at most $server_conns)"
    fi
    tap_prefix=
    dependency_checks "go through pgbouncer"
    outcome_checks "go through pgbouncer" 8
fi

# Node's pg sends unnamed statements only (unless a query is given a name): nothing to set.
if $npm_ok; then
    tap_prefix="through pgbouncer, " PGHOST=127.0.0.1 PGPORT=$bport PGDATABASE=$node_db \
        run_tap "node worker through pgbouncer" 120 node "$client_dir/node/ckworker.js" --workers 8 \
        queue decrement lock retry unique dependencies optimistic results
    PGDATABASE=$node_db dependency_checks "node through pgbouncer"
    PGDATABASE=$node_db outcome_checks "node through pgbouncer" 8
else
    not_ok "pgbouncer: npm ci in test/client/node"
    sed 's/^/# /' "$tmp/npm.log" | tail -n 20
fi

# 2. What a driver must set (nothing, where PgBouncer tracks prepared statements), 3. per-backend caches,
# 4. session locks: one test each.
tracked=false
! bouncer_tracks_prepared || tracked=true
if [[ -x $tmp/ckworker ]]; then
    run_tap "go pgbouncer findings" 60 "$tmp/ckworker" -workers 2 -parts prepare,caches,session \
        -dsn "$bouncer dbname=$db statement_cache_mode=describe" -direct "" -session-dsn "$bouncer dbname=${db}_session" \
        -tracked-prepares="$tracked"
fi
run_tap "python pgbouncer findings" 60 /usr/bin/python3 "$client_dir/python/ckworker.py" --dsn "$bouncer dbname=$db" \
    $($tracked && echo --tracked-prepares) prepare

started=$bouncer_pid
bouncer_stop
if [[ -n $started ]] && ! bouncer_alive "$started" &&
    ! psql -X -h 127.0.0.1 -p "$bport" -d "$db" -c '' >/dev/null 2>&1; then
    ok "pgbouncer: stopped (process $started gone, nothing listens on 127.0.0.1:$bport)"
else
    not_ok "pgbouncer: stopped (process ${started:-unknown})"
fi
tap_done
