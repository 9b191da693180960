#!/usr/bin/env bash
# `make bench-sustained` (test/run.sh bench-sustained starts the throwaway cluster, then runs this): a sustained run
# of ck's queue and of the seed statement side by side, at the same time, on one cluster with autovacuum at its
# defaults (CK_SUSTAINED_SYSTEMS="ck" for ck's alone). For each: 8 producers enqueue CK_SUSTAINED_JOBS jobs (default 5,000,000) at CK_SUSTAINED_RATE jobs/s
# (default 1,000, what this 2-CPU machine sustains for both at once; pgbench -R), one per transaction, while 8 workers claim and complete them; every 10 s a sample of
# jobs done, backlog, heap and index size, dead tuples and autovacuum passes, and the p50/p99 latency of the claims
# in those 10 s (from pgbench's transaction log). synchronous_commit off for every client (at on, this 2-CPU
# machine commits far fewer than the 6 transactions per job the two queues need at that rate).
# Writes test/bench/sustained/report.md, the data under test/bench/sustained/data/ and the plots
# test/bench/sustained_SYSTEM.png (sustained_ck.png, sustained_seed.png).
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=$(cd "$here/.." && pwd)
data=$here/data
results=$here/report.md
export PGDATABASE=ck_sustained PGOPTIONS='-c client_min_messages=warning -c synchronous_commit=off'
jobs=${CK_SUSTAINED_JOBS:-5000000}
rate=${CK_SUSTAINED_RATE:-1000}
producers=8
workers=8
drain_limit=${CK_SUSTAINED_DRAIN_LIMIT:-900}   # seconds to wait, once the producers are done, for the queues to empty
read -r -a systems <<<"${CK_SUSTAINED_SYSTEMS:-ck seed}"
declare -A label=([ck]="ck.claim + ck.complete" [seed]="seed: SKIP LOCKED + DELETE")
declare -A table=([ck]=sustained [seed]=tasks)

sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
value() { sql -At "$@"; }

work=$(mktemp -d)
chmod 777 "$work"
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$data"
rm -f "$data"/*.dat
dropdb --if-exists ck_sustained
createdb ck_sustained
sql -f "$here/setup.sql" >/dev/null
t0=$EPOCHREALTIME
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# start_workers SYSTEM: starts SYSTEM's 8 workers; their pgbench writes its transaction log into a FIFO read by
# latency.awk, which leaves data/latency_SYSTEM.dat once the workers are stopped. Sets worker_pid.
start_workers() {
    local system=$1 prefix=$work/log_$1
    # pgbench names its log PREFIX.PID, PID its own: the shell makes the FIFO, then becomes pgbench.
    bash -c 'mkfifo "$1.$$"
             { awk -v t0="$2" -f "$3" <"$1.$$" >"$4.tmp" && mv "$4.tmp" "$4"; } &
             shift 4
             exec "$@"' _ "$prefix" "$t0" "$here/latency.awk" "$data/latency_$system.dat" \
        pgbench -n -M prepared -T 86400 -c "$workers" -j 1 -l --log-prefix="$prefix" \
        -D phase=0 -D id=0 -D token=0 -f "$here/work_$system.sql" >"$work/workers_$system.out" 2>&1 &
    worker_pid=$!
    pids+=("$worker_pid")
}

# monitor: a sample of both queues every 10 s (data/samples.dat) until $work/stop exists.
monitor() {
    local next=10 now
    while [[ ! -e $work/stop ]]; do
        now=$(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%d", a - b }')
        if ((now >= next)); then
            value -F ' ' -v t0="$t0" -f "$here/sample.sql" >>"$data/samples.dat"
            next=$((next + 10))
        fi
        sleep 0.2
    done
    value -F ' ' -v t0="$t0" -f "$here/sample.sql" >>"$data/samples.dat"
}

echo "== $jobs jobs into each queue at $rate jobs/s, $producers producers and $workers workers each"
declare -A worker_pids=() producer_pids=()
for system in "${systems[@]}"; do
    start_workers "$system"
    worker_pids[$system]=$worker_pid
done
monitor &
monitor_pid=$!
pids+=("$monitor_pid")
for system in "${systems[@]}"; do
    pgbench -n -M prepared -c "$producers" -j 1 -R "$rate" -t $((jobs / producers)) \
        -f "$here/produce_$system.sql" >"$work/producers_$system.out" 2>&1 &
    producer_pids[$system]=$!
    pids+=("$!")
done
for system in "${systems[@]}"; do
    if ! wait "${producer_pids[$system]}"; then
        cat "$work/producers_$system.out" >&2
        exit 1
    fi
    echo "-- $system: producers done after $(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.0f", a - b }') s"
done
produced=$(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.0f", a - b }')
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# The workers drain what is left; then they stop.
waited=0
for system in "${systems[@]}"; do
    until [[ $(value -c "SELECT NOT EXISTS (SELECT FROM ${table[$system]})") == t ]] || ((waited >= drain_limit)); do
        sleep 1
        waited=$((waited + 1))
    done
done
drained=$(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.0f", a - b }')
for system in "${systems[@]}"; do
    kill -TERM "${worker_pids[$system]}" 2>/dev/null || true
    wait "${worker_pids[$system]}" 2>/dev/null || true
done
touch "$work/stop"
wait "$monitor_pid"
for system in "${systems[@]}"; do
    for ((i = 0; i < 100; i++)); do
        [[ -e $data/latency_$system.dat ]] && break
        sleep 0.1
    done
done

# One file per system: seconds, jobs/s over the last 10 s, backlog, heap MB, index MB, dead tuples, autovacuum
# passes, autovacuum running (0/1), claims in the window, claim p50 and p99 in ms (the window ending then).
for system in "${systems[@]}"; do
    awk -v rel="${table[$system]}" -v lat="$data/latency_$system.dat" '
        BEGIN { while ((getline line < lat) > 0) { split(line, f, " "); n[f[1]] = f[2]; p50[f[1]] = f[3]; p99[f[1]] = f[4] } }
        $2 == rel {
            w = (int($1 / 10 + 0.5) - 1) * 10
            rate = (seen ? ($3 - del) / ($1 - t) : 0)
            printf "%.1f %.0f %d %.2f %.2f %d %d %d %d %s %s\n", $1, rate, $4 - $3, $5 / 1048576, $6 / 1048576, $7, $9, $10,
                   n[w] + 0, (w in p50 ? p50[w] : "NaN"), (w in p99 ? p99[w] : "NaN")
            seen = 1; t = $1; del = $3
        }' "$data/samples.dat" >"$data/sustained_$system.dat"
done

# Plots: the same scales for both systems.
ranges=$(cat "$data"/sustained_*.dat | awk '
    { if ($2 > r) r = $2; if ($4 + $5 > s) s = $4 + $5; if ($6 > d) d = $6; if ($11 != "NaN" && $11 > l) l = $11; if ($1 > t) t = $1 }
    END { printf "tmax=%f; rmax=%f; smax=%f; dmax=%f; lmax=%f", t, r * 1.1 + 1, s * 1.1 + 0.1, d * 1.1 + 1, l * 1.2 + 0.01 }')
for system in "${systems[@]}"; do
    gnuplot -e "data='$data/sustained_$system.dat'; out='$bench/sustained_$system.png'; name='${label[$system]}'; \
                jobs=$jobs; rate=$rate; $ranges" "$here/plot.gp"
done

# The summary.
summary_row() {
    awk -v name="${label[$1]}" -v produced="$produced" '
        NR == 1 { next }
        { rows++ }
        $1 <= produced && $1 > 10 { sr += $2; sn++ }
        { if ($3 > backlog) backlog = $3; if ($4 > heap) heap = $4; if ($5 > idx) idx = $5; if ($6 > dead) dead = $6
          av = $7; h = $4; i = $5 }
        $1 <= 70 && $10 != "NaN" { if (f50 == "") f50 = $10; if ($11 > f99) f99 = $11 }
        $1 <= produced && $1 > produced - 60 && $10 != "NaN" { l50 = $10; if ($11 > l99) l99 = $11 }
        $11 != "NaN" && $11 > m99 { m99 = $11 }
        END { printf "| %s | %.0f | %\047d | %.1f / %.1f | %.1f / %.1f | %\047d | %d | %s / %.2f | %s / %.2f | %.2f |\n",
                     name, sr / sn, backlog, heap, idx, h, i, dead, av, f50, f99, l50, l99, m99 }' "$data/sustained_$1.dat"
}
ck_table="ck's queue as \`ck.create_queue\` makes it ($(value -c "SELECT array_to_string(reloptions, ', ')
    FROM pg_class WHERE relname = 'sustained'"))" seed_table="the seed's table with no options"
if ((${#systems[@]} > 1)); then
    title="ck's queue and the seed statement side by side" together="Both queues at the same time: for each,"
    tables="$ck_table, $seed_table"
else
    title="${label[${systems[0]}]} alone" together="One queue alone:"
    [[ ${systems[0]} == ck ]] && tables=$ck_table || tables=$seed_table
fi
cat >"$results" <<EOF
# Sustained run: $title

$(date -u '+%Y-%m-%d %H:%M UTC'), PostgreSQL $(value -c 'SHOW server_version'), $(nproc) CPUs, the throwaway cluster
(test/cluster.sh), autovacuum at the server's defaults (naptime $(value -c 'SHOW autovacuum_naptime'), cost limit
$(value -c "SELECT CASE current_setting('autovacuum_vacuum_cost_limit') WHEN '-1' THEN current_setting('vacuum_cost_limit')
                   ELSE current_setting('autovacuum_vacuum_cost_limit') END"), cost delay $(value -c 'SHOW autovacuum_vacuum_cost_delay')); $tables. Written by test/bench/sustained/run.sh (\`make bench-sustained\`).

$together $producers producers enqueue $jobs jobs, one per transaction, at $rate
jobs/s in all (pgbench -R), while $workers workers claim one job per transaction and complete it in the next
(a 10 ms pause when the claim finds nothing); synchronous_commit off. The producers were done after $produced s,
the queues empty after $drained s. Every 10 s: jobs completed, heap (pg_table_size) and index size, dead tuples
(pg_stat_user_tables) and the claims' latency (pgbench's transaction log, the claim alone; empty claims
included). Load average (1, 5, 15 min) at the start $load_before, when the producers were done $load_after (this
run's own clients and server count for about 2 to 3 on these 2 CPUs: more is other work on the machine). Plots: $(printf 'test/bench/sustained_%s.png ' "${systems[@]}"); data: test/bench/sustained/data/.

| queue | jobs/s (mean while producing) | max backlog | max heap / index MB | at the end heap / index MB | max dead tuples | autovacuum passes | claim p50 / p99 ms, first minute | last minute of producing | max p99 ms (10 s window) |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
EOF
for system in "${systems[@]}"; do summary_row "$system" >>"$results"; done
cat >>"$results" <<EOF

## The claim's plan after ANALYZE of a nearly empty queue (a regression check)

An earlier sustained run slowed down for this reason. test/bench/sustained/plan_flip.sql, run now: a queue left as a
busy one often is (the heap of 40,000 jobs, 8 left), vacuumed and analyzed; one claim (which plans ck's claim
statement in this backend: a generic plan, kept); then 40,000 new jobs, which fit in the space vacuum freed, so the
heap does not grow and ck's re-plan on growth does not fire. Before the fix the claims took 39-52 ms (the plan sorted
the whole backlog on every claim); ck now makes the claim's plan with sequential scans, bitmap scans and sorts off:

\`\`\`
$(sql -f "$here/plan_flip.sql" 2>&1)
\`\`\`
EOF
cat "$results"
echo
echo "results written to $results"
