#!/usr/bin/env bash
# `make bench`: pgbench throughput of concurrency_kit calls against the hand-written SQL they replace.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PGDATABASE=ck_bench PGOPTIONS='-c client_min_messages=warning'
seconds=${CK_BENCH_SECONDS:-10}
client_counts=(1 4 8 16)
results=$here/results.md

sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

# tps SCRIPT CLIENTS SYNC [VAR=VALUE...]: runs the pgbench SCRIPT for $seconds seconds and prints its tps.
tps() {
    local script=$1 clients=$2 sync=$3 var
    local defines=()
    for var in "${@:4}"; do defines+=(-D "$var"); done
    PGOPTIONS="$PGOPTIONS -c synchronous_commit=$sync" pgbench -n -M prepared -T "$seconds" -c "$clients" \
        -j $((clients < 2 ? clients : 2)) -f "$here/$script" "${defines[@]}" |
        awk '/^tps = / { print $3 }'
}

# compare BENCH WORKLOAD [VAR=VALUE...]: for each client count and synchronous_commit on/off, measures
# BENCH_handwritten.sql against BENCH_ck.sql (pgbench variables VAR=VALUE) and adds a row to the table.
# Each side runs twice for $seconds seconds, in the order hand-written, ck, ck, hand-written, each time after
# BENCH_setup.sql and a checkpoint, so that drift and leftovers of earlier runs weigh on both sides alike.
compare() {
    local bench=$1 workload=$2 clients sync script
    local -A runs
    shift 2
    for clients in "${client_counts[@]}"; do
        for sync in on off; do
            runs=([handwritten]="" [ck]="")
            for script in handwritten ck ck handwritten; do
                sql -f "$here/${bench}_setup.sql" -c CHECKPOINT
                runs[$script]+=" $(tps "${bench}_$script.sql" "$clients" "$sync" "$@")"
            done
            awk -v w="$workload" -v c="$clients" -v s="$sync" -v h="${runs[handwritten]}" -v k="${runs[ck]}" '
                function mean(list,   n, i, a, t) { n = split(list, a, " "); for (i = 1; i <= n; i++) t += a[i]; return t / n }
                BEGIN { printf "| %s | %d | %s | %.0f | %.0f | %.2f |\n", w, c, s, mean(h), mean(k), mean(k) / mean(h) }' |
                tee -a "$results"
        done
    done
}

dropdb --if-exists ck_bench
createdb ck_bench
sql -c "CREATE EXTENSION concurrency_kit"

cat >"$results" <<EOF
# concurrency_kit benchmark

$(date -u '+%Y-%m-%d %H:%M UTC'), $(psql -X -At -c 'SHOW server_version'), $(nproc) CPUs; \
pgbench -M prepared, each cell: 2 runs of ${seconds}s per side
(order hand-written, ck, ck, hand-written), tps averaged; ratio = ck tps / hand-written tps.

| workload | clients | sync_commit | hand-written tps | ck tps | ratio |
|---|---:|---|---:|---:|---:|
EOF
echo "(each row takes 4 pgbench runs of ${seconds}s)"
cat "$results"

compare stock "one hot row" skus=1
compare stock "10,000 rows, random sku" skus=10000

echo
echo "table written to $results"
