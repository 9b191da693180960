#!/usr/bin/env bash
# `make bench`: pgbench throughput of concurrency_kit calls against the hand-written SQL they replace,
# then the queue's batch, latency, size and memory figures. Writes everything to results.md.
set -euo pipefail
shopt -s inherit_errexit    # a failing pgbench or psql inside $(...) stops the run too

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PGDATABASE=ck_bench PGOPTIONS='-c client_min_messages=warning'
seconds=${CK_BENCH_SECONDS:-10}
backlog=$((seconds * 20000))    # jobs in each queue before a queue run: more than any run can drain
# CK_BENCH_PRELOAD: the configuration of the library, "on" (the default: in shared_preload_libraries) or "off"
# (installed and created only: the cluster restarted without it, test/cluster.sh preload off), in which every section
# runs; "on off" or "off on": the sections in the first, but "Queue: throughput in separate runs" measures each cell
# in both, one after the other, so that their ratio comes from the same run ("Queue: waking a waiting worker"
# measures ck.claim_wait in both whatever this says). Any but "on" writes results-preload-on-off.md (say) by default.
read -r -a preloads <<<"${CK_BENCH_PRELOAD:-on}"
declare -A preload_label=([on]="preloaded" [off]="not preloaded")
for p in "${preloads[@]}"; do
    [[ -n ${preload_label[$p]:-} ]] || { echo "CK_BENCH_PRELOAD: unknown configuration $p (on, off)" >&2; exit 2; }
done
if [[ ${preloads[*]} == on ]]; then
    results=${CK_BENCH_RESULTS:-$here/results.md}   # another file for a run of some sections only
else
    results=${CK_BENCH_RESULTS:-$here/results-preload-$(IFS=-; echo "${preloads[*]}").md}
fi

sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
value() { sql -At "$@"; }
out() { tee -a "$results"; }    # a line (or table row) of the results

# pgbench_run SCRIPT CLIENTS SYNC [PGBENCH_OPTION...]: runs the pgbench SCRIPT for $seconds seconds, prints its report.
pgbench_run() {
    local script=$1 clients=$2 sync=$3
    shift 3
    PGOPTIONS="$PGOPTIONS -c synchronous_commit=$sync" pgbench -n -M prepared -T "$seconds" -c "$clients" \
        -j $((clients < 2 ? clients : 2)) "${target[@]}" -f "$here/$script" "$@"
}
target=()   # more pgbench options for every run: another protocol, another server (PgBouncer)

# mean_tps SETUP CLIENTS SYNC [-D VAR=VALUE]... SCRIPT...: runs each pgbench SCRIPT in turn (a script may come
# more than once), each time after SETUP (with psql variables backlog and script) and a checkpoint, so that
# leftovers of earlier runs weigh on every script alike. Prints the mean tps of each script, in order of first
# appearance.
mean_tps() {
    local setup=$1 clients=$2 sync=$3 script tps
    local -a defines=() order=()
    local -A runs=()
    shift 3
    while [[ ${1:-} == -D ]]; do
        defines+=(-D "$2")
        shift 2
    done
    for script in "$@"; do
        sql -v backlog="$backlog" -v script="$script" -f "$here/$setup" -c CHECKPOINT >/dev/null
        tps=$(pgbench_run "$script" "$clients" "$sync" "${defines[@]}" | awk '/^tps = / { print $3 }')
        [[ -v runs[$script] ]] || order+=("$script")
        runs[$script]+=" $tps"
    done
    for script in "${order[@]}"; do
        awk -v list="${runs[$script]}" 'BEGIN { n = split(list, a, " "); for (i = 1; i <= n; i++) t += a[i]; printf "%.0f ", t / n }'
    done
    echo
}

# mixed_ratio SETUP CLIENTS SYNC BASELINE CK [PGBENCH_OPTION...]: after SETUP, one pgbench run of both scripts,
# each transaction picking one at random; prints the mean latency of BASELINE's transactions / that of CK's (from
# the transaction log). Both sides meet the same machine at the same moments, so the noise between runs cancels.
mixed_ratio() {
    local setup=$1 clients=$2 sync=$3 baseline=$4 ck=$5 logs
    shift 5
    logs=$(mktemp -d)
    sql -v backlog="$backlog" -v script="$baseline $ck" -f "$here/$setup" -c CHECKPOINT >/dev/null
    (cd "$logs" && pgbench_run "$baseline" "$clients" "$sync" -f "$here/$ck" -l "$@" >/dev/null)
    cat "$logs"/pgbench_log.* | awk '{ sum[$4] += $3; n[$4]++ }
        END { printf "%.2f", (sum[0] / n[0]) / (sum[1] / n[1]) }'
    rm -r "$logs"
}

# compare BENCH WORKLOAD ORDER [VAR=VALUE...]: for each of $client_counts and synchronous_commit on/off, measures
# BENCH_handwritten.sql against BENCH_ck.sql (pgbench variables VAR=VALUE), run in ORDER (e.g. "handwritten ck"),
# after BENCH_setup.sql, and adds a row to the table.
compare() {
    local bench=$1 workload=$2 order=$3 clients sync side var means handwritten ck mixed
    local -a scripts=() defines=()
    for side in $order; do scripts+=("${bench}_$side.sql"); done
    for var in "${@:4}"; do defines+=(-D "$var"); done
    for clients in "${client_counts[@]}"; do
        for sync in on off; do
            means=$(mean_tps "${bench}_setup.sql" "$clients" "$sync" "${defines[@]}" "${scripts[@]}")
            read -r handwritten ck <<<"$means"
            mixed=$(mixed_ratio "${bench}_setup.sql" "$clients" "$sync" "${scripts[0]}" "${scripts[1]}" "${defines[@]}")
            awk -v w="$workload" -v c="$clients" -v s="$sync" -v h="$handwritten" -v k="$ck" -v m="$mixed" \
                'BEGIN { printf "| %s | %d | %s | %d | %d | %.2f | %s |\n", w, c, s, h, k, k / h, m }' | out
        done
    done
}


# median LIST...: the median of the numbers (awk; mawk has no asort: an insertion sort of the few values).
median() {
    awk -v list="$*" 'BEGIN { n = split(list, a, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        print a[int((n + 1) / 2)] }'
}

# compare_rounds BENCH WORKLOAD BASE OTHER: like compare, for BENCH_BASE.sql against BENCH_OTHER.sql, in $rounds rounds
# of one separate run each, the order alternating (base first, other first, base first, ...). A table row with the median
# tps of each, the median of the rounds' ratios and the mixed-run latency ratio: a round's two runs meet the machine
# at nearly the same moment, so the median ratio keeps out the drift of the machine's speed between rounds.
compare_rounds() {
    local bench=$1 workload=$2 base=${1}_$3.sql other=${1}_$4.sql clients sync round mixed
    local -a tps counts=("${client_counts[@]}")
    # CK_BENCH_CLIENTS: other client counts than the section's (a run of the cells in question only)
    [[ -z ${CK_BENCH_CLIENTS:-} ]] || read -r -a counts <<<"$CK_BENCH_CLIENTS"
    for clients in "${counts[@]}"; do
        for sync in ${CK_BENCH_SYNC:-on off}; do
            local base_tps="" other_tps="" ratios=""
            for ((round = 0; round < rounds; round++)); do
                if ((round % 2 == 0)); then
                    read -r -a tps <<<"$(mean_tps "${bench}_setup.sql" "$clients" "$sync" "$base" "$other")"
                else
                    read -r -a tps <<<"$(mean_tps "${bench}_setup.sql" "$clients" "$sync" "$other" "$base")"
                    tps=("${tps[1]}" "${tps[0]}")
                fi
                base_tps+=" ${tps[0]}" other_tps+=" ${tps[1]}"
                ratios+=" $(awk -v b="${tps[0]}" -v o="${tps[1]}" 'BEGIN { printf "%.4f", o / b }')"
            done
            mixed=$(mixed_ratio "${bench}_setup.sql" "$clients" "$sync" "$base" "$other")
            printf '| %s | %d | %s | %d | %d | %.2f | %s |\n' "$workload" "$clients" "$sync" "$(median $base_tps)" \
                "$(median $other_tps)" "$(median $ratios)" "$mixed" | out
        done
    done
}

# queue_cell CLIENTS SYNC: one table row of the queue comparison. Jobs per second of the seed, the same SQL as
# ck's by hand, ck.claim + ck.complete, ck.complete_and_claim and ck.claim(q, 10) + ck.complete_many (one
# separate run each, after the same set-up), then one mixed run of the first four (each transaction picks one at
# random): mean latency per job of the seed / of ck's two calls, of the same SQL / ck's two calls, and of the
# seed / complete_and_claim.
queue_cell() {
    local clients=$1 sync=$2 logs means backlog=$((backlog * 3))   # batches drain three times the usual backlog
    local -a scripts=(queue_handwritten.sql queue_samesql.sql queue_ck.sql queue_cac.sql)
    means=$(mean_tps queue_setup.sql "$clients" "$sync" -D job=0 -D token=0 "${scripts[@]}" queue_batch10.sql)
    logs=$(mktemp -d)
    sql -v backlog="$backlog" -v script="${scripts[*]}" -f "$here/queue_setup.sql" -c CHECKPOINT >/dev/null
    (cd "$logs" && pgbench_run "${scripts[0]}" "$clients" "$sync" -f "$here/${scripts[1]}" -f "$here/${scripts[2]}" \
        -f "$here/${scripts[3]}" -D job=0 -D token=0 -l >/dev/null)
    cat "$logs"/pgbench_log.* | awk -v c="$clients" -v s="$sync" -v m="$means" '{ sum[$4] += $3; n[$4]++ }
        END { split(m, t, " "); for (i = 0; i < 4; i++) l[i] = sum[i] / n[i]
              printf "| %d | %s | %d | %d | %d | %d | %d | %.2f | %.2f | %.2f |\n", c, s, t[1], t[2], t[3], t[4], t[5] * 10,
                     l[0] / l[2], l[1] / l[2], l[0] / l[3] }' | out
    rm -r "$logs"
}

# preload CONFIG: the cluster restarted into CONFIG (on, off) unless it is so already.
preload() {
    local now=off
    [[ ,$(value -c 'SHOW shared_preload_libraries' | tr -d ' '), != *,concurrency_kit,* ]] || now=on
    [[ $now == "$1" ]] || bash "$here/../cluster.sh" preload "$1"
}

# separate_cell CLIENTS SYNC: throughput as a user sees it. The seed, ck.claim + ck.complete and
# ck.complete_and_claim, each on its own queue refilled before each of its runs; 3 rounds, the order rotating (seed
# first, then ck first, then c&c first). A table row with the median jobs/s of each, the median of the rounds' ratios
# to the seed, and the mixed-run latency ratios (seed/ck, seed/c&c) beside them; the row says the configuration
# of the library it ran in (LIBRARY), and is printed, not added to the results.
separate_cell() {
    local clients=$1 sync=$2 library=$3 round i mixed_ck mixed_cac
    local -a scripts=(queue_handwritten.sql queue_ck.sql queue_cac.sql) order tps
    local -A runs=()
    for round in 0 1 2; do
        order=("${scripts[@]:round}" "${scripts[@]:0:round}")
        read -r -a tps <<<"$(mean_tps queue_setup.sql "$clients" "$sync" -D job=0 -D token=0 "${order[@]}")"
        for i in 0 1 2; do runs[${order[i]}]+=" ${tps[i]}"; done
    done
    mixed_ck=$(mixed_ratio queue_setup.sql "$clients" "$sync" queue_handwritten.sql queue_ck.sql)
    mixed_cac=$(mixed_ratio queue_setup.sql "$clients" "$sync" queue_handwritten.sql queue_cac.sql -D job=0 -D token=0)
    local seed=(${runs[queue_handwritten.sql]}) ck=(${runs[queue_ck.sql]}) cac=(${runs[queue_cac.sql]}) rk="" rw=""
    for i in 0 1 2; do
        rk+=" $(awk -v k="${ck[i]}" -v b="${seed[i]}" 'BEGIN { print k / b }')"
        rw+=" $(awk -v w="${cac[i]}" -v b="${seed[i]}" 'BEGIN { print w / b }')"
    done
    printf '| %d | %s | %s | %d | %d | %d | %.2f | %.2f | %s | %s |\n' "$clients" "$sync" "$library" \
        "$(median "${seed[@]}")" "$(median "${ck[@]}")" "$(median "${cac[@]}")" "$(median $rk)" "$(median $rw)" \
        "$mixed_ck" "$mixed_cac"
}

# index_counts INDEX: "scans entries pages" so far of INDEX: its scans, the entries they read (pg_stat_user_indexes)
# and the pages they read (pg_statio_user_indexes).
index_counts() {
    value -F ' ' -c "SELECT s.idx_scan, s.idx_tup_read, io.idx_blks_hit + io.idx_blks_read FROM pg_stat_user_indexes AS s
                     JOIN pg_statio_user_indexes AS io USING (indexrelid) WHERE indexrelid = '$1'::regclass"
}

# per_scan BEFORE AFTER FIELD: from two index_counts of one index, FIELD (2: entries, 3: pages) per scan in between.
per_scan() {
    awk -v b="$1" -v a="$2" -v f="$3" 'BEGIN { split(b, x, " "); split(a, y, " ")
        printf "%.1f", (y[1] > x[1]) ? (y[f] - x[f]) / (y[1] - x[1]) : 0 }'
}

# claim_index_of QUEUE: the claim index of QUEUE, (priority, run_at, id).
claim_index_of() { value -c "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = '$1'::regclass AND indnatts = 3"; }

# gap_row LABEL WHAT SCRIPT INDEX CLIENTS: one mixed run (synchronous_commit off) of the seed against SCRIPT, a step
# between the seed and ck's statements; a table row with the mean latency per job of the seed / of SCRIPT and the
# pages each claim read from its claim index (INDEX; the seed's is tasks_ready), which grow with the dead entries
# that the claims since the last vacuum left at the head of the index.
gap_row() {
    local label=$1 what=$2 script=$3 index=$4 clients=$5 mixed seed0 seed1 step0 step1
    seed0=$(index_counts tasks_ready)
    step0=$(index_counts "$index")
    mixed=$(mixed_ratio queue_setup.sql "$clients" off queue_handwritten.sql "$script")
    sleep 1   # the backends of the run report their statistics as they exit
    seed1=$(index_counts tasks_ready)
    step1=$(index_counts "$index")
    echo "| $label | $what | $clients | $mixed | $(per_scan "$step0" "$step1" 3) | $(per_scan "$seed0" "$seed1" 3) |" | out
}

# scaling LABEL SCRIPT INDEX [VAR=VALUE...]: jobs per second of a queue SCRIPT (one job per transaction) at each of
# $scaling_clients clients, synchronous_commit off, one run each after the same set-up; a table row with every
# figure and the share of the script's own peak kept at the largest client count, and a row with the index
# entries its claims read per scan of INDEX, the index they walk (why a queue slows down with many workers).
scaling() {
    local label=$1 script=$2 index=$3 clients tps row="" reads="" peak=0 last var before after
    local -a defines=()
    for var in "${@:4}"; do defines+=(-D "$var"); done
    for clients in "${scaling_clients[@]}"; do
        before=$(index_counts "$index")
        # pgbench counts the time its clients take to connect against -T: give many clients longer.
        tps=$(seconds=$((seconds + clients / 16)) backlog=$(((seconds + clients / 16) * 20000)) \
                  mean_tps queue_setup.sql "$clients" off "${defines[@]}" "$script")
        sleep 1   # the backends of the run report their statistics as they exit
        after=$(index_counts "$index")
        tps=${tps% }
        [[ $tps =~ ^[0-9]+$ ]] || tps=0   # no transaction in the run
        row+=" $tps |"
        reads+=" $(per_scan "$before" "$after" 2) |"
        ((tps > peak)) && peak=$tps
        last=$tps
    done
    awk -v s="$label" -v r="$row" -v p="$peak" -v l="$last" 'BEGIN { printf "| %s |%s %.2f |\n", s, r, l / p }' | out
    echo "| index entries read per claim |$reads |" | out
}

# claim_latency BACKLOG: average latency in ms of ck.claim (one client, synchronous_commit off) on a queue kept at
# BACKLOG jobs (each claimed job is completed and replaced), starting from a freshly filled and vacuumed queue.
claim_latency() {
    sql -c "SELECT FROM ck.create_queue('latency') WHERE to_regclass('latency') IS NULL" -c "TRUNCATE latency" \
        -c "INSERT INTO latency (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, $1) AS g" \
        -c "VACUUM ANALYZE latency" -c CHECKPOINT >/dev/null
    pgbench_run queue_latency.sql 1 off -r | awk '/ck\.claim/ { print $1 }'
}

# size_row MOMENT: a table row with the total size (table, indexes, TOAST) and the index size of queue big.
size_row() {
    value -c "SELECT format('| %s | %s | %s |', '$1', pg_size_pretty(pg_total_relation_size('big')),
                                                   pg_size_pretty(pg_indexes_size('big')))" | out
}

# autovacuums QUEUE: how many times autovacuum has processed QUEUE.
autovacuums() { value -c "SELECT autovacuum_count FROM pg_stat_user_tables WHERE relid = '$1'::regclass"; }
# vacuumed_since COUNT: true once autovacuum has processed queue big after its COUNTth pass and left no dead row.
vacuumed_since() {
    [[ $(value -c "SELECT autovacuum_count > $1 AND n_dead_tup = 0 FROM pg_stat_user_tables
                   WHERE relid = 'big'::regclass") == t ]]
}

# queue_size JOBS: fills queue big with JOBS jobs, drains it with 4 clients claiming 100 at a time, and waits
# until autovacuum has removed every dead row (a pass that began during the drain leaves the last ones: then
# the next; at most 3 minutes, with autovacuum_naptime lowered to 1 s meanwhile); a size row at each step.
queue_size() {
    local jobs=$1 t0 t1 av0 av1 waited=0 left
    sql -c "SELECT ck.drop_queue(to_regclass('big')) WHERE to_regclass('big') IS NOT NULL" \
        -c "SELECT ck.create_queue('big')" >/dev/null
    size_row "empty"
    sql -c "INSERT INTO big (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, $jobs) AS g" \
        -c "ANALYZE big"
    size_row "full: $jobs jobs"
    av0=$(autovacuums big)
    t0=$EPOCHREALTIME
    pgbench -n -M prepared -c 4 -j 2 -t $((jobs / 400 + 100)) -f "$here/queue_drain.sql" >/dev/null
    t1=$EPOCHREALTIME
    av1=$(autovacuums big)
    left=$(value -c "SELECT count(*) FROM big")
    if ((left == 0)); then size_row "drained"; else size_row "drained but for $left jobs"; fi
    sql -c "ALTER SYSTEM SET autovacuum_naptime = '1s'" -c "SELECT pg_reload_conf()" >/dev/null
    until vacuumed_since "$av1" || ((waited == 180)); do
        sleep 1
        waited=$((waited + 1))
    done
    sql -c "ALTER SYSTEM RESET autovacuum_naptime" -c "SELECT pg_reload_conf()" >/dev/null
    if ((waited < 180)); then
        size_row "drained, then autovacuumed (passes: $(($(autovacuums big) - av1)), ${waited} s later)"
    else
        size_row "drained, 180 s later: dead rows left"
    fi
    awk -v j="$jobs" -v t0="$t0" -v t1="$t1" -v av=$((av1 - av0)) 'BEGIN {
        printf "\nDrained in %.0f s (%.0f jobs/s); autovacuum passes over the queue during the drain: %d.\n",
               t1 - t0, j / (t1 - t0), av }' | out
}

# backend_memory CALLS: one backend makes CALLS claim + complete calls; a row per memory sample.
backend_memory() {
    sql -v calls="$1" -v sample_every=$(($1 / 10)) -f "$here/queue_memory.sql" >/dev/null
    value -c "SELECT format('| %s | %s | %s |', calls, vmdata_kb, context_bytes) FROM memory_samples ORDER BY calls" | out
    echo | out
    value -c "SELECT format('Growth from the first sample to the last: VmData %s kB, memory contexts %s bytes.',
                            last.vmdata_kb - first.vmdata_kb, last.context_bytes - first.context_bytes)
              FROM (SELECT * FROM memory_samples ORDER BY calls LIMIT 1) AS first,
                   (SELECT * FROM memory_samples ORDER BY calls DESC LIMIT 1) AS last" | out
}

# wanted SECTION: true when CK_BENCH_ONLY (a space-separated list of stock queue gap scaling naptime wakeup unique limits
# timeouts history history_counts pause dependencies lock rate queue_rate optimistic overlaps race_detector latency size memory) is unset or names SECTION.
wanted() { [[ -z ${CK_BENCH_ONLY:-} || " $CK_BENCH_ONLY " == *" $1 "* ]]; }

# clause_cost WORKLOAD [VAR=VALUE...]: what the SET search_path clause of 0.1.0 cost a call: one mixed run (1 and 8
# clients, synchronous_commit off) of ck.try_decrement against the same C function declared with that clause
# (bench.try_decrement_pinned); a table row with the mean latency of each and the difference in microseconds.
clause_cost() {
    local workload=$1 clients logs var
    local -a defines=()
    for var in "${@:2}"; do defines+=(-D "$var"); done
    for clients in 1 8; do
        logs=$(mktemp -d)
        sql -v backlog="$backlog" -v script=pinned -f "$here/stock_setup.sql" -c CHECKPOINT >/dev/null
        (cd "$logs" && pgbench_run stock_ck_pinned.sql "$clients" off -f "$here/stock_ck.sql" -l "${defines[@]}" >/dev/null)
        cat "$logs"/pgbench_log.* | awk -v w="$workload" -v c="$clients" '{ sum[$4] += $3; n[$4]++ }
            END { p = sum[0] / n[0]; k = sum[1] / n[1]
                  printf "| %s | %d | %.1f | %.1f | %.1f | %.2f |\n", w, c, p, k, p - k, p / k }' | out
        rm -r "$logs"
    done
}

# rule_row WORKLOAD ROWS: the seed's rule of thumb on the first ROWS rows of docs at 1, 4 and 16 clients,
# synchronous_commit off, one run each: successes per second of optimistic attempts (read the version, then
# ck.update_if_version: a stale one changes nothing and the client's next attempt reads again), of pessimistic ones
# (SELECT ... FOR NO KEY UPDATE, then UPDATE, one transaction) and of conditional ones (ck.try_decrement), and the
# share of optimistic attempts that were stale. Successes are counted in the table (versions bumped, stock taken),
# attempts by pgbench.
rule_row() {
    local workload=$1 rows=$2 clients script attempts done
    local -a cells
    for clients in 1 4 16; do
        cells=()
        for script in version_ck.sql version_pessimistic.sql version_conditional.sql; do
            sql -f "$here/version_setup.sql" -c CHECKPOINT >/dev/null
            attempts=$(pgbench_run "$script" "$clients" off -D rows="$rows" |
                awk -F': ' '/^number of transactions actually processed/ { print $2 }')
            done=$(value -c "SELECT sum(version - 1) + sum(1000000000 - qty) FROM docs")
            cells+=("$attempts" "$done")
        done
        awk -v w="$workload" -v c="$clients" -v s="$seconds" -v oa="${cells[0]}" -v od="${cells[1]}" \
            -v pd="${cells[3]}" -v cd="${cells[5]}" 'BEGIN {
            printf "| %s | %d | %.0f | %.0f%% | %.0f | %.0f |\n", w, c, od / s, 100 * (oa - od) / oa, pd / s, cd / s }' | out
        rule_points[$clients]+=$(awk -v s="$seconds" -v od="${cells[1]}" -v pd="${cells[3]}" -v cd="${cells[5]}" \
            'BEGIN { printf " %.0f %.0f %.0f", od / s, pd / s, cd / s }')
    done
}
declare -A rule_points=()   # clients -> the successes/s of rule_row's cells, workload after workload, for the plot

preload "${preloads[0]}"
dropdb --if-exists ck_bench
createdb ck_bench
sql -c "CREATE EXTENSION concurrency_kit"

cat >"$results" <<EOF
# concurrency_kit benchmark

$(date -u '+%Y-%m-%d %H:%M UTC'), $(psql -X -At -c 'SHOW server_version'), $(nproc) CPUs; pgbench -M prepared, runs of ${seconds}s;
the code $(bash "$here/built.sh") (test/bench/built.sh); the library ${preload_label[${preloads[0]}]}$(
    ((${#preloads[@]} == 1)) || echo " (CK_BENCH_PRELOAD=\"${preloads[*]}\": the separate runs in each configuration)")$(
    [[ -z ${CK_BENCH_ONLY:-} ]] || echo "; sections: $CK_BENCH_ONLY"); load average (1, 5, 15 min) at the start
$(cut -d' ' -f1-3 /proc/loadavg).

## Throughput against hand-written SQL

Ratio = ck tps / hand-written tps, from separate runs. Stock: each cell is 2 runs per side (order hand-written, ck, ck,
hand-written), tps averaged. Queue: one job per transaction (claim, then acknowledge in a separate
statement, each in autocommit), one run per side; before every run the set-up refills the queue it
uses with $backlog jobs, so that no run inherits anything from another. The hand-written queue is the
seed \`UPDATE tasks SET status = 'running' ... WHERE id = (SELECT id ... FOR UPDATE SKIP LOCKED)\`
then \`DELETE\`, with a partial index on (id) WHERE status = 'ready'; \`ck.claim\` also sets a lease
and a fencing token, and \`ck.complete\` checks the token.

Mixed = one more run of both scripts together, each transaction picking one at random: mean
latency of the hand-written transactions / mean latency of the ck ones. Both sides meet the same
machine at the same moments, so it is the steadier figure on a shared 2-core VM (separate runs
swing by up to 30%); under contention for one row it understates the difference, since both sides
wait in the same queue for the row.

| workload | clients | sync_commit | hand-written tps | ck tps | ratio | mixed |
|---|---:|---|---:|---:|---:|---:|
EOF
echo "(each stock and lock row takes 5 pgbench runs of ${seconds}s, each queue row 3)"
cat "$results"

if wanted stock; then
client_counts=(1 4 8 16)
compare stock "one hot row" "handwritten ck ck handwritten" skus=1
compare stock "10,000 rows, random sku" "handwritten ck ck handwritten" skus=10000
out <<EOF

### What the SET search_path clause of 0.1.0 cost

\`ck.try_decrement\` against the same C function declared with 0.1.0's \`SET search_path = pg_catalog,
pg_temp\` (\`bench.try_decrement_pinned\`), both in one mixed pgbench run, synchronous_commit off: mean
latency per transaction in microseconds.

| workload | clients | with the clause (µs) | 0.2.0, without (µs) | saved per call (µs) | ratio |
|---|---:|---:|---:|---:|---:|
EOF
clause_cost "one hot row" skus=1
clause_cost "10,000 rows, random sku" skus=10000
fi

if wanted queue; then
out <<EOF

## Queue: jobs per second

No-op jobs, one per transaction but batch 10 (ten per transaction); before every run the set-up
refills the queues with $((backlog * 3)) jobs. **seed**: \`UPDATE tasks SET status = 'running' ... WHERE id =
(SELECT id ... FOR UPDATE SKIP LOCKED) RETURNING id\`, then \`DELETE\`, two statements, with a partial
index on ready tasks. **same SQL**: the statements of \`ck.claim\` and \`ck.complete\` written by hand
on a queue made by \`ck.create_queue\` (lease, token, attempts; three indexes). **ck**: \`ck.claim\` then
\`ck.complete\`. **c&c**: one \`ck.complete_and_claim\` per job. **batch 10**: \`ck.claim(q, 10)\` then
\`ck.complete_many\`. One separate run each (jobs/s), then one mixed run of the first four: mean
latency per job of one side / of the other (> 1: the second is faster). Each script has a queue of its
own, all made alike, so that in the mixed run each sees the same share of the claims.

| clients | sync_commit | seed | same SQL | ck | c&c | batch 10 | mixed seed/ck | mixed same SQL/ck | mixed seed/c&c |
|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|
EOF
for clients in 1 4 8 16; do
    for sync in on off; do
        queue_cell "$clients" "$sync"
    done
done
fi

if wanted separate; then
out <<EOF

## Queue: throughput in separate runs

What a user sees who runs one queue: each system alone on its own queue, refilled to $backlog jobs
(and vacuumed) before each of its runs of ${seconds} s, one job per transaction; 3 rounds, the order
rotating (seed first, then ck, then c&c); the median jobs/s of each and the median of the rounds'
ratios to the seed. **seed**: \`UPDATE ... (SELECT ... FOR UPDATE SKIP LOCKED)\` + \`DELETE\`; **ck**:
\`ck.claim\` + \`ck.complete\`; **c&c**: one \`ck.complete_and_claim\` per job. Beside them the mixed-run
latency ratios (seed/ck, seed/c&c: > 1, ck is faster), which share the garbage of one run between
two tables and so hide what it costs. Library: the configuration the cell ran in: $(
    if ((${#preloads[@]} == 1)); then echo "${preload_label[${preloads[0]}]}, all of them."; else
        echo "each cell in both, CK_BENCH_PRELOAD=\"${preloads[*]}\", one after the other, in that order in the first cell
and the order alternating from cell to cell, the cluster restarted between them (test/cluster.sh preload on|off)."; fi)

| clients | sync_commit | library | seed jobs/s | ck jobs/s | c&c jobs/s | ck/seed | c&c/seed | mixed seed/ck | mixed seed/c&c |
|---:|---|---|---:|---:|---:|---:|---:|---:|---:|
EOF
cell=0 between=""
for clients in 1 4 16; do
    for sync in ${CK_BENCH_SYNC:-off on}; do   # CK_BENCH_SYNC=off: the CPU cost alone
        order=("${preloads[@]}")
        ((cell % 2 == 0 || ${#order[@]} == 1)) || order=("${order[1]}" "${order[0]}")
        declare -A cell_rows=()
        for p in "${order[@]}"; do
            preload "$p"
            cell_rows[$p]=$(separate_cell "$clients" "$sync" "${preload_label[$p]}")
        done
        for p in "${preloads[@]}"; do echo "${cell_rows[$p]}" | out; done
        # not preloaded / preloaded, this cell's two rows: the medians' ratios (the seed's shows the noise)
        [[ -z ${cell_rows[on]:-} || -z ${cell_rows[off]:-} ]] ||
            between+=$(awk -F'|' -v on="${cell_rows[on]}" -v off="${cell_rows[off]}" -v first="${order[0]}" 'BEGIN {
                split(on, a, "|"); split(off, b, "|"); gsub(/ /, "", a[3])
                printf "| %d | %s | %s | %.2f | %.2f | %.2f |\n", a[2], a[3], (first == "on" ? "preloaded" : "not preloaded"),
                       b[5] / a[5], b[6] / a[6], b[7] / a[7] }')$'\n'
        cell=$((cell + 1))
    done
done
preload "${preloads[0]}"
if [[ -n $between ]]; then
    out <<EOF

Not preloaded / preloaded, the two rows of each cell above (their median jobs/s; the two came one after the
other, in the order said). The seed uses nothing of the library: its ratio is the noise between the two.

| clients | sync_commit | first | seed off/on | ck off/on | c&c off/on |
|---:|---|---|---:|---:|---:|
EOF
    printf '%s' "$between" | out
fi
fi

if wanted gap; then
out <<EOF

## Queue: where the same SQL loses to the seed

The seed against three steps towards ck's own statements, each in one mixed run (synchronous_commit off,
a backlog of $backlog jobs): mean latency per job of the seed / of the step (< 1: the step is slower), and
the pages of its claim index that each claim read, the step's and the seed's. The claims since the last
vacuum leave dead entries at the head of the claim index; each claim walks over them, and an entry
of (priority, run_at, id) is twice as wide as one of (id).

| step | what it adds to the seed | clients | mixed seed/step | claim-index pages per claim | the seed's |
|---|---|---:|---:|---:|---:|
EOF
sql -v backlog=1 -v script="queue_handwritten queue_gap_narrow queue_gap_wide queue_samesql" \
    -f "$here/queue_setup.sql" >/dev/null
claim_index=$(claim_index_of jobs_samesql)
for clients in 1 4; do
    gap_row "1 (queue_gap_narrow.sql)" "ck's row; lease end, token and attempts written" queue_gap_narrow.sql \
        gap_narrow_ready "$clients"
    gap_row "2 (queue_gap_wide.sql)" "1, claimed in ck's order from a (priority, run_at, id) index" \
        queue_gap_wide.sql gap_wide_ready "$clients"
    gap_row "same SQL (queue_samesql.sql)" \
        "2, only due jobs under max_attempts, the index keeps leased jobs, a leased-jobs index" \
        queue_samesql.sql "$claim_index" "$clients"
done
fi

if wanted scaling; then
scaling_clients=(1 4 16 64 256)
out <<EOF

## Queue: many workers

Jobs per second with synchronous_commit off, one run per cell after the same set-up (a backlog of
$backlog jobs); the last column is the share of the script's own peak kept at 256 clients. The seed
is \`FOR UPDATE SKIP LOCKED\` + \`DELETE\` (two statements per job), ck one \`ck.complete_and_claim\` per job.

The rows "index entries read per claim" count the entries of the index each claim walks
(pg_stat_user_indexes) per scan: old versions of claimed jobs that no open snapshot may still
need are marked dead and skipped; with many transactions open at once they cannot be, and every
claim steps over them.

| script | 1 | 4 | 16 | 64 | 256 | kept at 256 |
|---|---:|---:|---:|---:|---:|---:|
EOF
sql -v backlog=1 -v script="queue_handwritten queue_cac" -f "$here/queue_setup.sql" >/dev/null
scaling "seed (queue_handwritten.sql)" queue_handwritten.sql tasks_ready
claim_index=$(claim_index_of jobs_cac)
scaling "ck.complete_and_claim (queue_cac.sql)" queue_cac.sql "$claim_index" job=0 token=0
# The same workers through PgBouncer in transaction mode, with a pool of two server connections per CPU. PgBouncer
# 1.18 passes neither named prepared statements nor startup options (it is told to ignore PGOPTIONS): both rows use
# -M extended, and the database carries synchronous_commit = off meanwhile.
pool=$(($(nproc) * 2))
bouncer_dir=$(mktemp -d /tmp/ck_bench_bouncer.XXXXXX)
source "$here/../bouncer.sh"
bport=$(bouncer_port)
trap 'bouncer_stop; rm -rf "$bouncer_dir"' EXIT
bouncer_start "$bouncer_dir" "$bport" "$pool" 1000 "ck_bench = host=127.0.0.1 port=$PGPORT dbname=ck_bench user=postgres"
sql -c "ALTER DATABASE ck_bench SET synchronous_commit = off"
out <<EOF

The same loop with \`-M extended\`, connected directly, then through PgBouncer $("$bouncer_bin" --version | head -n 1 |
    awk '{ print $2 }') (transaction pooling, $pool server connections):

| script | 1 | 4 | 16 | 64 | 256 | kept at 256 |
|---|---:|---:|---:|---:|---:|---:|
EOF
target=(-M extended)
scaling "ck.complete_and_claim, -M extended" queue_cac.sql "$claim_index" job=0 token=0
target=(-M extended -h 127.0.0.1 -p "$bport")
scaling "ck.complete_and_claim, -M extended, through PgBouncer" queue_cac.sql "$claim_index" job=0 token=0
target=()
sql -c "ALTER DATABASE ck_bench RESET synchronous_commit"
bouncer_stop
fi

if wanted naptime; then
nap_seconds=60
out <<EOF

## Queue: how often autovacuum comes

\`ck.complete_and_claim\` at 4 clients, synchronous_commit off, one run of ${nap_seconds} s per setting of
autovacuum_naptime (how often autovacuum visits each database) after the same set-up (a backlog of
$((nap_seconds * 20000)) jobs): jobs per second, pages of the claim index that each claim read, and autovacuum's
passes over the queue during the run.

| autovacuum_naptime | jobs/s | claim-index pages per claim | autovacuum passes |
|---|---:|---:|---:|
EOF
sql -v backlog=1 -v script=queue_cac -f "$here/queue_setup.sql" >/dev/null
claim_index=$(claim_index_of jobs_cac)
for nap in 1min 5s 1s; do
    sql -c "ALTER SYSTEM SET autovacuum_naptime = '$nap'" -c "SELECT pg_reload_conf()" >/dev/null
    counts0=$(index_counts "$claim_index")
    passes0=$(autovacuums jobs_cac)
    tps=$(seconds=$nap_seconds backlog=$((nap_seconds * 20000)) mean_tps queue_setup.sql 4 off -D job=0 -D token=0 queue_cac.sql)
    sleep 1   # the backends of the run report their statistics as they exit
    echo "| $nap | ${tps% } | $(per_scan "$counts0" "$(index_counts "$claim_index")" 3) | $(($(autovacuums jobs_cac) - passes0)) |" | out
done
sql -c "ALTER SYSTEM RESET autovacuum_naptime" -c "SELECT pg_reload_conf()" >/dev/null
fi

if wanted wakeup; then
out <<EOF

## Queue: waking a waiting worker

8 workers wait while a producer enqueues 1,000 jobs, one per transaction, at random intervals of 1
to 10 ms (test/bench/wakeup.py): milliseconds from the producer's COMMIT returning to a worker
holding the job. \`claim_wait\` is \`ck.claim_wait\` with the library preloaded and not (installed
and created only, the cluster restarted without it: from 0.4.0 its shared state is made at the first use
of a queue); beside each, how it learnt of the jobs (\`ck.claim_wait_mode()\` after the run: commit, woken
by the committing transaction; poll, looking again after 10 ms, doubling to 200 ms). LISTEN is a client
that LISTENs on the queue's NOTIFY channel (\`notify => true\`) and then calls \`ck.claim\` (library
preloaded).

| way | p50 ms | p99 ms | max ms |
|---|---:|---:|---:|
EOF
# wake_row LABEL WAY: a table row; for claim_wait the label gains the mode ck.claim_wait_mode() says afterwards.
wake_row() {
    local figures label=$1
    figures=$(/usr/bin/python3 "$here/wakeup.py" latency "$2") || figures="failed failed failed"
    [[ $2 != claim_wait ]] || label+=" (mode: $(value -c 'SELECT ck.claim_wait_mode()'))"
    printf '| %s | %s | %s | %s |\n' "$label" $figures | out
}
preload on
wake_row "ck.claim_wait, library preloaded" claim_wait
wake_row "LISTEN, then ck.claim" listen
preload off
wake_row "ck.claim_wait, not preloaded" claim_wait
out <<EOF

\`ck.await_job\`: 8 callers each await a job of their own (one queue, with a history) while a worker
finishes one awaited job per transaction every 1 to 10 ms, each once its caller sleeps
(test/bench/wakeup.py await): milliseconds from the worker's COMMIT returning to the caller
holding the outcome, over 400 waits; beside them the finishing statement's own median (its COMMIT
included) and the callers' CPU per await.

| library | p50 ms | p90 ms | p99 ms | max ms | finish ms | caller CPU ms per await |
|---|---:|---:|---:|---:|---:|---:|
EOF
# await_row LABEL: a row of that table.
await_row() {
    local figures
    figures=$(/usr/bin/python3 "$here/wakeup.py" await 400 8) || figures="failed failed failed failed failed failed"
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$1" $figures | out
}
await_row "not preloaded (mode: $(value -c 'SELECT ck.claim_wait_mode()'))"
idle_off=$(/usr/bin/python3 "$here/wakeup.py" idle 64 10)
preload on
await_row "preloaded"
idle_on=$(/usr/bin/python3 "$here/wakeup.py" idle 64 10)
enqueue_mixed=$(mixed_ratio enqueue_setup.sql 1 off enqueue_plain.sql enqueue_ck.sql)
preload "${preloads[0]}"
out <<EOF

64 workers waiting 10 s in \`ck.claim_wait\` on an empty queue used $idle_on CPU seconds in all with
the library preloaded (the calls themselves: they sleep until max_wait) and $idle_off not preloaded.
\`ck.enqueue\` with the queue's wake-up trigger against the same queue without it, one mixed run (1
client, synchronous_commit off): ratio $enqueue_mixed.
EOF
fi

if wanted unique; then
out <<EOF

## Queue: enqueue with a unique key

\`ck.enqueue(..., unique_key => k)\` (a new key each call, but one call in 10 repeats a key already taken: a
duplicate, nothing inserted) against \`ck.enqueue\` without a key, into an emptied queue before every run, one job
per transaction; 3 rounds of separate runs, the order alternating (plain first, key first, plain first): the
median tps of each and the median of the rounds' ratios, and one mixed run (mean latency plain / key).

| workload | clients | sync_commit | plain tps | unique key tps | ratio | mixed |
|---|---:|---|---:|---:|---:|---:|
EOF
client_counts=(1 4) rounds=3
compare_rounds unique "enqueue, 1 in 10 a duplicate" plain key
fi

if wanted limits; then
client_counts=(1 4 16) rounds=5   # two runs after the same set-up differ by up to a fifth here: more rounds
out <<EOF

## Queue: concurrency limits

\`ck.claim\` + \`ck.complete\` over jobs of 1,000 concurrency keys limited to 1 each (the queue's default limit:
1,000 jobs ready, the others parked until their key's job is done) against the same loop over jobs without a
key, each queue refilled with the same backlog before every run (the keyed jobs as \`ck.enqueue\` places them: the
first of each key ready, the others parked); $rounds rounds of separate runs, the order alternating (plain first,
keyed first, ...): the median tps of each and the median of the rounds' ratios, and one mixed run (mean latency
plain / keyed).

| workload | clients | sync_commit | plain tps | 1,000 keys at limit 1, tps | ratio | mixed |
|---|---:|---|---:|---:|---:|---:|
EOF
compare_rounds limits "claim + complete" plain keyed
fi

if wanted timeouts; then
client_counts=(1 4 16) rounds=3
out <<EOF

## Queue: job timeouts

\`ck.claim\` + \`ck.extend_lease\` + \`ck.complete\` on a queue with a timeout of an hour (each claim records
its attempt's deadline, the heartbeat is capped by it, the completion checks it; none is reached) against the same
loop on a queue without one, each refilled with the same backlog before every run; $rounds rounds of separate runs,
the order alternating: the median tps of each and the median of the rounds' ratios, and one mixed run (mean
latency plain / timed).

| workload | clients | sync_commit | plain tps | timeout set, tps | ratio | mixed |
|---|---:|---|---:|---:|---:|---:|
EOF
compare_rounds timeouts "claim + heartbeat + complete" plain timed
fi

if wanted history; then
client_counts=(1 4 16) rounds=5
out <<EOF

## Queue: history of finished jobs

\`ck.claim\` + \`ck.complete(..., result)\` on a queue keeping its finished jobs for 7 days (\`ck.set_history\`: each
completion also writes the job's record, in the statement that deletes it) against the same loop on a queue without
a history (test/bench/history_*.sql); $rounds rounds of separate runs, the order alternating: the median tps of each
and the median of the rounds' ratios, and one mixed run (mean latency off / on). Goal: history on >= 0.85 of off.

| workload | clients | sync_commit | history off tps | history on tps | ratio | mixed |
|---|---:|---|---:|---:|---:|---:|
EOF
compare_rounds history "claim + complete" off on
fi

if wanted history_counts; then
rows=${CK_BENCH_HISTORY_ROWS:-10000000}
out <<EOF

## Queue: counts over the history

$rows finished jobs over the last 7 days, in hourly partitions, sealed by one \`ck.maintain_history\` (each ended
partition counted once, its counts kept); then \`ck.history_counts\` (every period and state: the sealed periods
from their kept counts, the current hour counted) timed 20 times, against one \`count(*) ... GROUP BY state\` over
the whole history (test/bench/history_counts.sql). Goal: under 10 ms at 10 million rows.

| rows | partitions | seal (ms) | history_counts median (ms) | max (ms) | plain count (ms) |
|---:|---:|---:|---:|---:|---:|
EOF
sql -At -F ' | ' -v rows="$rows" -f "$here/history_counts.sql" | tail -n 1 | awk '{ print "| " $0 " |" }' | out
fi

if wanted pause; then
client_counts=(1 16) rounds=3
out <<EOF

## Queue: pause and resume, unused

\`ck.claim\` + \`ck.complete\` on a queue paused and resumed before the run against the same loop on a queue never
paused, each refilled with the same backlog before every run; $rounds rounds of separate runs, the order alternating:
the median tps of each and the median of the rounds' ratios, and one mixed run (mean latency never / resumed). What
the pause's gate costs every claim (its lock taken first, one shared counter read) shows in the queue section's ratio
of ck to the seed, against the records of the release before 1.1.0.

| workload | clients | sync_commit | never paused tps | paused and resumed, tps | ratio | mixed |
|---|---:|---|---:|---:|---:|---:|
EOF
compare_rounds pause "claim + complete" never resumed
fi

if wanted queue_rate; then
client_counts=(1 4 16) rounds=3
out <<EOF

## Queue: rate limits under the limit

\`ck.claim\` + \`ck.complete\` over jobs of 1,000 concurrency keys, each key limited to 10,000 starts a second (a
few a second each: under it) against the same loop without a limit; then jobs without a key, limited together to
1,000,000 a second, against the same plain queue: each claim counts on one of 8 stripe rows. Each queue
refilled with the same backlog before every run; $rounds rounds of separate runs, the order alternating: the median
tps of each, the median of the rounds' ratios, and one mixed run (mean latency plain / limited).

| workload | clients | sync_commit | plain tps | rate-limited tps | ratio | mixed |
|---|---:|---|---:|---:|---:|---:|
EOF
compare_rounds rate_queue "1,000 keys under their rate" plain keyed
compare_rounds rate_queue "one queue-wide rate, under it" plain wide
fi

if wanted dependencies; then
out <<EOF

## Dependencies: completion cost against the number of dependants

One session, each call in a transaction of its own (test/bench/dependencies.sql). Fan-out: a job
with N dependants completed (mean of 3); released is how many became ready at once (one batch,
at most 256; the rest follow as claims come back empty). Fan-in: one job waits for 10,000, which
are completed one by one: the mean cost per completion by quarter.

| shape | dependants | complete (ms) | released |
|---|---:|---:|---:|
EOF
sql -At -f "$here/dependencies.sql" | out
fi

if wanted lock; then
client_counts=(1 8)
compare lock "advisory lock by number, random keys" "handwritten ck ck handwritten" keys=1000000
compare lock "advisory lock by number, one key" "handwritten ck ck handwritten" keys=1
compare lock "advisory lock by name, random keys" "handwritten ck_name ck_name handwritten" keys=1000000
compare lock "advisory lock by name, one key" "handwritten ck_name ck_name handwritten" keys=1
fi

if wanted rate; then
# ck.try_rate against its UPDATE written by hand: keys under their rate (100 a second over 10,000 keys), and one hot
# key at 1,000 a second (all on one row). Rows in the table above.
client_counts=(1 8)
compare rate "try_rate, 10,000 keys at 100/s" "handwritten ck ck handwritten" keys=10000 n=100
compare rate "try_rate, one hot key at 1,000/s" "handwritten ck ck handwritten" keys=1 n=1000
fi

if wanted optimistic; then
client_counts=(1 4)
compare version "optimistic: read, then a versioned update; one hot row" "handwritten ck ck handwritten" rows=1
compare version "optimistic: read, then a versioned update; 10,000 rows" "handwritten ck ck handwritten" rows=10000
out <<EOF

## Optimistic, pessimistic or conditional: the seed's rule of thumb

One change per attempt to a row picked at random among the first rows of a table, synchronous_commit off, one
${seconds} s run per cell. **optimistic**: read the version, then \`ck.update_if_version\`; a stale attempt changes
nothing and is retried by the client's next attempt (stale = the share of attempts that were). **pessimistic**:
\`SELECT ... FOR NO KEY UPDATE\`, then \`UPDATE\`, in one transaction. **conditional**: one \`ck.try_decrement\`.
Successes per second are counted in the table afterwards (versions bumped, units taken), not from pgbench.

| rows | clients | optimistic successes/s | stale | pessimistic successes/s | conditional successes/s |
|---|---:|---:|---:|---:|---:|
EOF
rule_row "one hot row" 1
rule_row "10,000" 10000
plot_data=$(mktemp)
for clients in 1 4 16; do echo "$clients${rule_points[$clients]}"; done >"$plot_data"
if command -v gnuplot >/dev/null; then
    gnuplot -e "data='$plot_data'; out='$here/optimistic.png'" "$here/optimistic.gp"
    echo "plot: $here/optimistic.png"
fi
rm "$plot_data"
fi

if wanted overlaps; then
out <<EOF

## Overlap audit

\`ck.find_overlaps\` on 1,000,000 bookings (1,000 rooms x 1,000 hours) with 10 overlapping pairs.

EOF
sql -f "$here/overlaps_setup.sql" >/dev/null
value -c "SELECT format('%s pairs found in %s s', count(*),
                        round(extract(epoch FROM clock_timestamp() - statement_timestamp())::numeric, 2))
          FROM ck.find_overlaps('big_bookings', 'during', '{room}')" | out
sql -c "DROP TABLE big_bookings"
fi


if wanted latency; then
out <<EOF

## Queue: claim latency against backlog

One client, synchronous_commit off, each claimed job completed and replaced by a new one so that
the backlog keeps its size; average latency of the \`ck.claim\` statement (pgbench -r), from a freshly
filled and vacuumed queue.

EOF
small=$(claim_latency 10000)
large=$(claim_latency 1000000)
awk -v s="$small" -v l="$large" 'BEGIN {
    printf "| backlog | claim latency (ms) |\n|---:|---:|\n| 10,000 | %.3f |\n| 1,000,000 | %.3f |\n\n", s, l
    printf "Ratio 1,000,000 / 10,000: %.2f.\n", l / s }' | out
fi

if wanted size; then
out <<EOF

## Queue: size after draining a million jobs

Queue \`big\`, autovacuum on with the server's defaults (the queue table's own scale factors are
0.02); drained by 4 clients, each claiming 100 jobs and completing them in one statement. The last
row is once autovacuum has removed every dead row (autovacuum_naptime lowered to 1 s once the drain
is over, not to wait up to a minute for each pass). Total is pg_total_relation_size (table,
indexes, TOAST), indexes is pg_indexes_size.

| moment | total | indexes |
|---|---:|---:|
EOF
queue_size 1000000
fi

# race_cell CLIENTS SYNC: the race detector's cost on the stock decrement and the optimistic update, written by
# hand and through ck, in three configurations: the library not preloaded (the hand-written SQL then runs on a
# server without any of the library's hooks), preloaded with ck.race_detector off, and preloaded with it on
# ('warning', every session). Each script runs in its own separate run after the same set-up; 3 rounds, the
# configurations' order rotating. Prints a table row per script: the median tps of each configuration and the
# medians of the rounds' ratios off / no hooks and on / off. (No mixed run: a configuration is the server's, or a
# session setting whose every change replans.)
race_cell() {
    local clients=$1 sync=$2 round config script i detector
    local -a configs=(nohooks off on) order scripts tps
    local -A runs=()
    for round in 0 1 2; do
        order=("${configs[@]:round}" "${configs[@]:0:round}")
        for config in "${order[@]}"; do
            scripts=(stock_handwritten.sql version_handwritten.sql)
            [[ $config == nohooks ]] || scripts+=(stock_ck.sql version_ck.sql)
            if [[ $config == nohooks ]]; then preload off; else preload on; fi
            detector=off
            [[ $config != on ]] || detector=warning
            read -r -a tps <<<"$(PGOPTIONS="$PGOPTIONS -c ck.race_detector=$detector" mean_tps race_setup.sql \
                "$clients" "$sync" -D skus=10000 -D rows=10000 "${scripts[@]}")"
            for i in "${!scripts[@]}"; do runs[$config/${scripts[i]}]+=" ${tps[i]}"; done
        done
    done
    preload on
    for script in stock_handwritten.sql version_handwritten.sql stock_ck.sql version_ck.sql; do
        local base=(${runs[nohooks/$script]:-}) off=(${runs[off/$script]}) on=(${runs[on/$script]}) r_off="" r_on=""
        for i in 0 1 2; do
            [[ ${#base[@]} -eq 0 ]] || r_off+=" $(awk -v o="${off[i]}" -v b="${base[i]}" 'BEGIN { print o / b }')"
            r_on+=" $(awk -v n="${on[i]}" -v o="${off[i]}" 'BEGIN { print n / o }')"
        done
        printf '| %s | %d | %s | %s | %d | %d | %s | %.2f |\n' "${script%.sql}" "$clients" "$sync" \
            "$( ((${#base[@]} == 0)) && echo — || median "${base[@]}")" "$(median "${off[@]}")" "$(median "${on[@]}")" \
            "$([[ -z $r_off ]] && echo — || printf '%.2f' "$(median $r_off)")" "$(median $r_on)" | out
    done
}

if wanted race_detector; then
out <<EOF

## Race detector: its cost, off and on

The stock decrement (10,000 rows, random sku) and the optimistic update (read the version, then a versioned
\`UPDATE\`; 10,000 rows), each written by hand and through ck (\`ck.try_decrement\`, \`ck.try_update_if_version\`),
in separate runs of ${seconds} s after the same set-up, 3 rounds, the order of the configurations rotating:
**no hooks**, the library not preloaded (the hand-written SQL runs on a server without the library's hooks);
**off**, preloaded, \`ck.race_detector = off\`; **on**, preloaded, \`ck.race_detector = 'warning'\` in every session
(each read is recorded, each overwrite checked; these workloads overwrite nothing unguarded, so nothing is
reported). Median tps per configuration and the medians of the rounds' ratios. Goals (issue 48): off / no hooks
>= 0.99, on / off >= 0.85.

| script | clients | sync | no hooks | off | on | off / no hooks | on / off |
|---|---:|---|---:|---:|---:|---:|---:|
EOF
for clients in ${CK_BENCH_CLIENTS:-1 4}; do
    for sync in ${CK_BENCH_SYNC:-on off}; do race_cell "$clients" "$sync"; done
done
fi

if wanted memory; then
out <<EOF

## Queue: backend memory over a million claims

One backend, a procedure making 1,000,000 \`ck.claim\` + \`ck.complete\` calls and committing every
100; VmData from /proc/self/status and the sum of pg_backend_memory_contexts.total_bytes, sampled
after the first 100 calls and then every 100,000.

| calls | VmData kB | memory contexts bytes |
|---:|---:|---:|
EOF
backend_memory 1000000
fi

echo
echo "results written to $results"
