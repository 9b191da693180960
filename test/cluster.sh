#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for the harness: `start`, `stop` (and wipe), `preload on|off` (restart with or without
# the library in shared_preload_libraries; start preloads it unless CK_PRELOAD=off), or `env` (the exports clients need).
set -euo pipefail

port=${CK_PORT:-54329}
dir=/tmp/concurrency_kit-$port
data=$dir/data
log=$data/server.log
if [[ -x /usr/lib/postgresql/${CK_PG:-15}/bin/pg_config ]]; then
    pg_config=/usr/lib/postgresql/${CK_PG:-15}/bin/pg_config
else
    pg_config=$(command -v pg_config)
fi
bindir=$("$pg_config" --bindir)

# The server refuses to run as root, so as root run its programs as postgres (from a directory it can read).
as_server_user() {
    if [[ $EUID -eq 0 ]]; then
        (cd / && runuser -u postgres -- "$@")
    else
        "$@"
    fi
}

stop() {
    if [[ -f $data/postmaster.pid ]]; then
        as_server_user "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 ||
            as_server_user "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}

start() {
    stop
    if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" || [[ $? -eq 1 ]]; then
        echo "cluster.sh: another server already listens on port $port; set CK_PORT to a free port" >&2
        exit 1
    fi
    mkdir -p "$dir"
    [[ $EUID -ne 0 ]] || chown postgres: "$dir"
    if ! as_server_user "$bindir/initdb" -D "$data" --auth=trust -U postgres -E UTF8 --locale=C >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        exit 1
    fi
    cat >>"$data/postgresql.conf" <<EOF

# concurrency_kit test cluster (test/cluster.sh)
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 300
max_prepared_transactions = 10
fsync = on
synchronous_commit = on
shared_preload_libraries = '$([[ ${CK_PRELOAD:-on} == off ]] || echo concurrency_kit)'
EOF
    if ! as_server_user "$bindir/pg_ctl" -D "$data" -l "$log" -w start >/dev/null; then
        tail -n 50 "$log" >&2
        exit 1
    fi
    echo "cluster: PostgreSQL $("$bindir/postgres" -V | awk '{print $3}') on 127.0.0.1:$port, socket dir $dir"
}

# preload on|off: restarts the running cluster with or without the library preloaded (ck.claim_wait's wake-up on commit).
preload() {
    local value=
    case ${1:-} in
        on) value=concurrency_kit ;;
        off) ;;
        *) echo "usage: $0 preload on|off" >&2; exit 2 ;;
    esac
    sed -i "s/^shared_preload_libraries = .*/shared_preload_libraries = '$value'/" "$data/postgresql.conf"
    if ! as_server_user "$bindir/pg_ctl" -D "$data" -l "$log" -m fast -w restart >/dev/null; then
        tail -n 50 "$log" >&2
        exit 1
    fi
}

print_env() {
    cat <<EOF
export PG_CONFIG='$pg_config'
export PATH='$bindir':"\$PATH"
export PGHOST='$dir' PGPORT='$port' PGUSER=postgres
export CK_SERVER_LOG='$log'
EOF
}

case ${1:-} in
    start) start ;;
    stop) stop ;;
    preload) preload "${2:-}" ;;
    env) print_env ;;
    *) echo "usage: $0 start|stop|preload on|off|env" >&2; exit 2 ;;
esac
