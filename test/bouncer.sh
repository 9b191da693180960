# PgBouncer (Debian's pgbouncer) in transaction pooling mode for the harness; sourced by the client test
# (test/client/pgbouncer.sh) and the benchmark (test/bench/run.sh).
#   bouncer_start DIR PORT POOL_SIZE MAX_CLIENTS DATABASE_LINE...: writes DIR/pgbouncer.ini with the given lines
#       under [databases], starts it daemonized on 127.0.0.1:PORT (as postgres when we are root) and waits until
#       it answers for the first database; sets bouncer_pid. Fails, with the log's tail, if it does not come up.
#   bouncer_stop: stops the one started.
#   bouncer_port: the port for it beside the cluster's, PGPORT + 10000 (PGPORT - 10000 past 65535).
#   bouncer_tracks_prepared: true for PgBouncer 1.24 or later, whose max_prepared_statements defaults to 200: a
#       client's named prepared statements then follow it to every server connection.
bouncer_bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
bouncer_pid=

bouncer_tracks_prepared() {
    local version major minor
    version=$("$bouncer_bin" --version | sed -n 's/^[Pp]g[Bb]ouncer \([0-9]*\)\.\([0-9]*\).*/\1 \2/p' | head -n 1)
    read -r major minor <<<"${version:-0 0}"
    ((major > 1 || (major == 1 && minor >= 24)))
}

bouncer_port() {
    local port=$((PGPORT + 10000))
    ((port <= 65535)) || port=$((PGPORT - 10000))
    echo "$port"
}

# bouncer_alive PID: the process runs (a zombie does not count: it may never be reaped here).
bouncer_alive() {
    local state
    state=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $state != Z* ]]
}

bouncer_stop() {
    [[ -n $bouncer_pid ]] || return 0
    kill -TERM "$bouncer_pid" 2>/dev/null || true
    for _ in $(seq 50); do bouncer_alive "$bouncer_pid" || break; sleep 0.1; done
    ! bouncer_alive "$bouncer_pid" || kill -KILL "$bouncer_pid" 2>/dev/null || true
    bouncer_pid=
}

bouncer_start() {
    local dir=$1 port=$2 pool=$3 clients=$4 line first
    shift 4
    first=${1%% *}
    [[ -x $bouncer_bin ]] || { echo "pgbouncer not found (apt-get install pgbouncer)"; return 1; }
    if psql -X -h 127.0.0.1 -p "$port" -d postgres -c '' >/dev/null 2>&1; then
        echo "something already listens on 127.0.0.1:$port"
        return 1
    fi
    {
        echo '[databases]'
        for line in "$@"; do echo "$line"; done
        cat <<INI

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = $pool
max_client_conn = $clients
server_round_robin = 0
ignore_startup_parameters = extra_float_digits, options
pidfile = $dir/pgbouncer.pid
logfile = $dir/pgbouncer.log
INI
    } >"$dir/pgbouncer.ini"
    if [[ $EUID -eq 0 ]]; then
        chown -R postgres: "$dir"
        (cd / && runuser -u postgres -- "$bouncer_bin" -d -q "$dir/pgbouncer.ini")
    else
        "$bouncer_bin" -d -q "$dir/pgbouncer.ini"
    fi
    for _ in $(seq 50); do
        [[ -s $dir/pgbouncer.pid ]] && bouncer_pid=$(<"$dir/pgbouncer.pid")
        [[ -n $bouncer_pid ]] && psql -X -h 127.0.0.1 -p "$port" -d "$first" -Atc 'SELECT 1' >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    tail -n 20 "$dir/pgbouncer.log" 2>/dev/null
    return 1
}
