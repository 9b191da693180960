#!/usr/bin/env bash
# `make bench-peers` (test/run.sh bench-peers starts the throwaway cluster, then runs this): jobs per second of
# concurrency_kit's queue against what users would pick instead, in one run on the same machine: the seed statement
# (FOR UPDATE SKIP LOCKED + DELETE), PgQ (Debian's postgresql-15-pgq3), pg-boss and graphile-worker (npm), with no-op
# handlers at 1, 4, 8, 16 and 64 workers, synchronous_commit off and on; then the claim latency against the backlog.
# Writes test/bench/peers.md, the data under test/bench/peers/data/ and the plots test/bench/peers_*.png.
#
# Settings (environment): CK_PEERS_SECONDS (pgbench run length, default 3), CK_PEERS_ROUNDS (runs per cell for the
# systems, median taken, default 3), CK_PEERS_WORKERS (default "1 4 8 16 64"), CK_PEERS_JOBS (jobs
# enqueued for pg-boss and graphile-worker, default 50000), CK_PEERS_NODE_SECONDS (their time limit per cell, default
# 6), CK_PEERS_BACKLOGS (claim latency, default "10000 30000 100000 300000 1000000"), CK_PEERS_ONLY (a
# space-separated list of sections: throughput latency; default both).
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=$(cd "$here/.." && pwd)
node_dir=$here/node
data=$here/data
export PGDATABASE=ck_peers PGOPTIONS='-c client_min_messages=warning'
seconds=${CK_PEERS_SECONDS:-3}
rounds=${CK_PEERS_ROUNDS:-3}
read -r -a workers_list <<<"${CK_PEERS_WORKERS:-1 4 8 16 64}"
node_jobs=${CK_PEERS_JOBS:-50000}
node_seconds=${CK_PEERS_NODE_SECONDS:-6}
read -r -a backlogs <<<"${CK_PEERS_BACKLOGS:-10000 30000 100000 300000 1000000}"
results=$bench/peers.md
backlog=$((seconds * 20000))   # jobs in the ck and seed queues before each run: more than any run drains
pgq_events=200000              # PgQ events per worker count, spread over one queue per worker, 500 a batch

# The systems, in table order: key and label.
systems=(seed ck cac batch10 wait pgq pgboss-fetch pgboss-work graphile graphile-batch)
declare -A label=(
    [seed]="seed: SKIP LOCKED + DELETE"
    [ck]="ck.claim + ck.complete"
    [cac]="ck.complete_and_claim"
    [batch10]="ck.claim 10 + ck.complete_many"
    [wait]="ck.claim_wait + ck.complete"
    [pgq]="PgQ batch consumer, a queue per worker"
    [pgboss-fetch]="pg-boss fetch + complete"
    [pgboss-work]="pg-boss work(), polling 0.5 s"
    [graphile]="graphile-worker"
    [graphile-batch]="graphile-worker, batched"
)

wanted() { [[ -z ${CK_PEERS_ONLY:-} || " $CK_PEERS_ONLY " == *" $1 "* ]]; }
sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
value() { sql -At "$@"; }
out() { tee -a "$results"; }

# PgQ, gnuplot and Node come with test/run.sh's packages; the npm packages are installed here when missing.
ensure_node_modules() {
    if ! (cd "$node_dir" && npm ls --omit=dev >/dev/null 2>&1); then
        echo "== npm ci in $node_dir"
        (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
    fi
}

median() { tr ' ' '\n' <<<"$*" | grep . | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# pgbench_tps SCRIPT CLIENTS SYNC [PGBENCH_OPTION...]: tps of one pgbench run (-T $seconds unless the options say
# -t); a run in which a client aborted (an empty queue) fails the benchmark.
pgbench_tps() {
    local script=$1 clients=$2 sync=$3 report
    shift 3
    local -a length=(-T "$seconds")
    [[ " $* " == *" -t "* ]] && length=()
    if ! report=$(PGOPTIONS="$PGOPTIONS -c synchronous_commit=$sync" pgbench -n -M prepared "${length[@]}" \
                  -c "$clients" -j $((clients < 2 ? clients : 2)) -f "$script" "$@" 2>&1); then
        echo "$report" >&2
        echo "pgbench $script with $clients clients failed" >&2
        return 1
    fi
    awk '/^tps = / { print $3 }' <<<"$report"
}

# run_system KEY WORKERS SYNC: jobs per second of one run of system KEY.
run_system() {
    local key=$1 n=$2 sync=$3 tps line
    case $key in
        seed | ck | cac | batch10 | wait)
            local script setup_script=queue_ck.sql fill=$backlog
            local -a defines=()
            case $key in
                seed) script=$bench/queue_handwritten.sql; setup_script=queue_handwritten.sql ;;
                ck) script=$bench/queue_ck.sql ;;
                cac) script=$bench/queue_cac.sql; setup_script=queue_cac.sql; defines=(-D job=0 -D token=0) ;;
                batch10) script=$bench/queue_batch10.sql; fill=$((backlog * 3)) ;;
                wait) script=$here/queue_claim_wait.sql ;;
            esac
            sql -v backlog="$fill" -v script="$setup_script" -f "$bench/queue_setup.sql" -c CHECKPOINT >/dev/null
            tps=$(pgbench_tps "$script" "$n" "$sync" "${defines[@]}")
            if [[ $key == batch10 ]]; then tps=$(awk -v t="$tps" 'BEGIN { print t * 10 }'); fi
            ;;
        pgq)
            sql -c 'CALL bench_pgq_rewind()' -c CHECKPOINT >/dev/null
            tps=$(pgbench_tps "$here/pgq_consumer.sql" "$n" "$sync" -t "$(pgq_batches "$n")")
            line=$(value -F ' ' -c 'SELECT events, dry FROM bench_pgq_progress')
            [[ $line == "$((n * $(pgq_batches "$n") * 500)) $n" ]] ||
                { echo "PgQ: expected every queue read to its end, got (events dry) $line" >&2; return 1; }
            tps=$(awk -v t="$tps" 'BEGIN { print t * 500 }')
            ;;
        pgboss-fetch | graphile | graphile-batch | pgboss-work)
            line=$(cd "$node_dir" && PGOPTIONS="$PGOPTIONS -c synchronous_commit=$sync" \
                   node peers.js "$key" "$n" "$node_jobs" "$node_seconds")
            tps=${line##* }
            ;;
    esac
    printf '%s %d %s %.0f\n' "$key" "$n" "$sync" "$tps" >>"$data/samples.dat"
    printf '%.0f' "$tps"
}

# pgq_batches WORKERS: batches of 500 events in each of the WORKERS queues ($pgq_events in all, at least 4 each).
pgq_batches() { local b=$((pgq_events / 500 / $1)); echo $((b < 4 ? 4 : b)); }

throughput() {
    local n sync r key
    local -A runs=()
    : >"$data/samples.dat"
    for n in "${workers_list[@]}"; do
        echo "-- $n workers: PgQ fill ($(pgq_batches "$n") batches of 500 in each of $n queues)"
        sql -c "CALL bench_pgq_fill($n, $(($(pgq_batches "$n") * 500)))" >/dev/null
        for sync in off on; do
            # Each round runs every system once, in turn, so that each meets the machine at the same moments.
            for ((r = 1; r <= rounds; r++)); do
                for key in "${systems[@]}"; do
                    runs[$key $n $sync]+=" $(run_system "$key" "$n" "$sync")"
                done
            done
            echo "   sync $sync: $(for key in "${systems[@]}"; do printf '%s %s; ' "$key" "$(median ${runs[$key $n $sync]})"; done)"
        done
    done
    # The medians, one row per system and one column per worker count, for the table and the plot.
    for sync in off on; do
        {
            printf '"workers"'
            for key in "${systems[@]}"; do printf ' "%s"' "${label[$key]}"; done
            echo
            for n in "${workers_list[@]}"; do
                printf '%d' "$n"
                for key in "${systems[@]}"; do printf ' %.0f' "$(median ${runs[$key $n $sync]})"; done
                echo
            done
        } >"$data/throughput_$sync.dat"
    done
    for sync in off on; do
        out <<EOF

### Jobs per second, synchronous_commit $sync

Columns: workers.

| system | $(printf '%s | ' "${workers_list[@]}")
|---|$(printf -- '---:|%.0s' "${workers_list[@]}")
EOF
        local i=0
        for key in "${systems[@]}"; do
            i=$((i + 1))
            awk -v name="${label[$key]}" -v col=$((i + 1)) 'NR > 1 { row = row sprintf(" %\047d |", $col) }
                END { printf "| %s |%s\n", name, row }' "$data/throughput_$sync.dat" | out
        done
    done
}

# claim_ms SYSTEM BACKLOG: the average latency in ms of SYSTEM's claim statement (one
# client, synchronous_commit off, each claimed job completed and replaced so that the backlog keeps its size),
# from a freshly filled and vacuumed queue.
claim_ms() {
    local system=$1 n=$2 script pattern
    case $system in
        ck)
            sql -c "SELECT FROM ck.create_queue('latency') WHERE to_regclass('latency') IS NULL" -c "TRUNCATE latency" \
                -c "INSERT INTO latency (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, $n) AS g" \
                -c "VACUUM ANALYZE latency" -c CHECKPOINT >/dev/null
            script=$bench/queue_latency.sql pattern='ck\.claim'
            ;;
        seed)
            sql -v backlog="$n" -v script=handwritten -f "$bench/queue_setup.sql" -c CHECKPOINT >/dev/null
            script=$here/latency_seed.sql pattern='UPDATE tasks'
            ;;
        pgboss)
            script=$data/pgboss_latency.sql pattern='WITH next'
            (cd "$node_dir" && node peers.js pgboss-latency "$n") >"$script"
            sql -c CHECKPOINT
            ;;
    esac
    PGOPTIONS="$PGOPTIONS -c synchronous_commit=off" pgbench -n -M prepared -T "$seconds" -c 1 -r -f "$script" |
        awk -v p="$pattern" '$0 ~ p && /^ *[0-9.]+ / { print $1; exit }'
}

latency() {
    local n system ms
    local -A row=()
    for n in "${backlogs[@]}"; do
        for system in seed ck pgboss; do
            ms=$(claim_ms "$system" "$n")
            row[$n]+=" $ms"
            echo "   backlog $n, $system: $ms ms"
        done
    done
    {
        echo '"backlog" "seed: SKIP LOCKED + DELETE" "ck.claim" "pg-boss fetch"'
        for n in "${backlogs[@]}"; do echo "$n${row[$n]}"; done
    } >"$data/latency.dat"
    out <<EOF

### Claim latency against backlog

One client, synchronous_commit off, each claimed job completed and a new one enqueued so that the backlog keeps its
size; average latency in ms of the claim statement alone (pgbench -r), from a freshly filled and vacuumed queue,
${seconds} s per cell. pg-boss's is its own fetch statement (from the installed package) run through pgbench.

| backlog | seed: SKIP LOCKED + DELETE | ck.claim | pg-boss fetch |
|---:|---:|---:|---:|
EOF
    awk 'NR > 1 { printf "| %\047d | %.3f | %.3f | %.3f |\n", $1, $2, $3, $4 }' "$data/latency.dat" | out
}

plots() {
    if [[ -s $data/throughput_off.dat ]]; then
        gnuplot -e "data='$data/throughput_off.dat'; out='$bench/peers_throughput.png'" "$here/throughput.gp"
    fi
    if [[ -s $data/latency.dat ]]; then
        gnuplot -e "data='$data/latency.dat'; out='$bench/peers_latency.png'" "$here/latency.gp"
    fi
}

ensure_node_modules
mkdir -p "$data"
dropdb --if-exists ck_peers
createdb ck_peers
sql -c 'CREATE EXTENSION concurrency_kit' -c 'CREATE EXTENSION pgq' -f "$here/pgq_setup.sql"

cat >"$results" <<EOF
# Side by side: concurrency_kit and the queues users pick instead

$(date -u '+%Y-%m-%d %H:%M UTC'), PostgreSQL $(value -c 'SHOW server_version'), $(nproc) CPUs, one throwaway cluster
(test/cluster.sh: fsync on, shared_preload_libraries = concurrency_kit, other settings default). concurrency_kit
$(value -c "SELECT extversion FROM pg_extension WHERE extname = 'concurrency_kit'"), PgQ $(value -c 'SELECT pgq.version()')
(Debian postgresql-15-pgq3 $(dpkg-query -W -f='${Version}' postgresql-15-pgq3)), $(cd "$node_dir" && node peers.js versions).
Written by test/bench/peers/run.sh (\`make bench-peers\`).

No-op handlers throughout. Every cell ran in one pass over the worker counts; inside a cell the systems take turns,
round after round.

- **seed**: \`UPDATE tasks SET status = 'running' ... WHERE id = (SELECT id ... ORDER BY id LIMIT 1 FOR UPDATE SKIP
  LOCKED)\` then \`DELETE\`, each in autocommit (test/bench/queue_handwritten.sql); no lease, no token.
- **ck**: \`ck.claim\` + \`ck.complete\` (queue_ck.sql), \`ck.complete_and_claim\` (queue_cac.sql), \`ck.claim(q, 10)\` +
  \`ck.complete_many\` (queue_batch10.sql, jobs = transactions x 10), \`ck.claim_wait(q, 1, NULL, '1 second')\` +
  \`ck.complete\` (peers/queue_claim_wait.sql).
- These five: pgbench -M prepared, ${seconds} s runs, a worker = a client; before each run the queue is refilled with
  $backlog jobs ($((backlog * 3)) for batches) and vacuumed; median of $rounds runs.
- **PgQ**: its batch consumer (next_batch, get_batch_events, finish_batch in one transaction). PgQ is an event log,
  not a job table: a consumer reads the events between two ticks as one batch, with no per-job lease, lock or
  acknowledgement (a failed event is retried with event_retry), and a consumer reads one batch at a time, so N
  workers are N queues with one consumer each (PgQ's cooperative consumers are not in Debian's package). The fill
  ticks after every 500 events (PgQ's default ticker_max_count), so every batch is 500 events; $pgq_events events per
  worker count (at least 2,000 per queue), each run reads every queue to its end (pgbench -t); the consumer is
  rewound to the first tick between runs; median of $rounds runs.
- **pg-boss fetch + complete**: a loop per worker of \`boss.fetch(queue)\` (one job) then \`boss.complete(queue, id)\`,
  pg-boss's own manual-polling API at full speed (its fetch sorts every ready job: see the latency table).
- **pg-boss work()**: as its documentation shows, \`work()\` called once per worker, batchSize 1,
  pollingIntervalSeconds 0.5 (its minimum; default 2): a worker fetches, runs the handler, completes (without
  waiting) and sleeps out the interval, so it tops out at 2 jobs/s per worker whatever the database does.
- **graphile-worker**: \`run()\` with concurrency = workers, maxPoolSize = workers + 1, otherwise its defaults (each
  job fetched and completed on its own, LISTEN/NOTIFY for new jobs).
- **graphile-worker, batched**: the same with the settings of its performance page: localQueue size 500,
  completeJobBatchDelay 0, failJobBatchDelay 0.
- pg-boss and graphile-worker: $node_jobs jobs enqueued first with their bulk APIs (\`insert\`, \`addJobs\`), not
  timed; then the workers start, and jobs/s = jobs finished (as the database counts them) / seconds, until all
  $node_jobs are finished or $node_seconds s have passed (so the slow ones are measured on a backlog of about
  $node_jobs jobs, as the others); median of $rounds runs, each on $node_jobs jobs enqueued afresh.
EOF

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
if wanted throughput; then
    throughput
fi
if wanted latency; then
    latency
fi
out <<EOF

Load average (1, 5, 15 min) at the start $load_before, at the end $(cut -d' ' -f1-3 /proc/loadavg): on these 2 CPUs a
load well above the run's own clients means other work shared the machine, and every figure above moves with it.
EOF
plots
echo
echo "results written to $results"
