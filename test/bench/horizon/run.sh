#!/usr/bin/env bash
# `make bench-horizon` (test/run.sh bench-horizon starts the throwaway cluster, then runs this): the queue under a held
# xmin horizon. For each variant (CK_HORIZON_VARIANTS, default "idle rr") and each system (ck: ck.claim + ck.complete;
# the seed: UPDATE ... (SELECT ... FOR UPDATE SKIP LOCKED) + DELETE), one at a time, each on a freshly made, empty
# table (test/bench/sustained/setup.sql) in one database: 2 producers offer 800 jobs/s in all (pgbench -R), 6
# workers claim one job per transaction and complete it in the next; synchronous_commit off for every client,
# autovacuum at the server's defaults. The timeline: CLEAN (CK_HORIZON_CLEAN s, default 60), then PIN
# (CK_HORIZON_PIN s, default 600), then RECOVER (CK_HORIZON_RECOVER s, default 60); producers and workers run
# through all three. During the pin, variant idle: one session takes an XID (pg_current_xact_id()) and stays idle in
# transaction, then rolls back; variant rr: four REPEATABLE READ sessions (started 7.5 s apart) each run
# BEGIN ISOLATION LEVEL REPEATABLE READ, a count(*) of the queue table every second for 30 s, COMMIT, again, so
# that overlapping snapshots hold the horizon. Every 10 s a sample: jobs completed, backlog, dead tuples, the claim
# index's scans and the pages they read (pg_statio_user_indexes), the claims' p50/p99 (pgbench's transaction log,
# test/bench/sustained/latency.awk) and the p99 of the jobs' wait from enqueue to claim (the payload holds the
# enqueue time; the completing statement writes the wait to the UNLOGGED table horizon_wait, for both systems).
# Writes test/bench/horizon/report.md, the data under test/bench/horizon/data/, and the plots
# test/bench/horizon_VARIANT.png.
set -euo pipefail
shopt -s inherit_errexit nullglob

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=$(cd "$here/.." && pwd)
sustained=$bench/sustained
data=$here/data
results=$here/report.md
db=ck_horizon
export PGDATABASE=$db PGOPTIONS='-c client_min_messages=warning -c synchronous_commit=off'
clean=${CK_HORIZON_CLEAN:-60}
pin=${CK_HORIZON_PIN:-600}
recover=${CK_HORIZON_RECOVER:-60}
read -r -a variants <<<"${CK_HORIZON_VARIANTS:-idle rr}"
rate=${CK_HORIZON_RATE:-800}   # jobs/s offered in all (a lower one only to try the script out)
producers=2
workers=6
total=$((clean + pin + recover))
read -r -a systems <<<"${CK_HORIZON_SYSTEMS:-ck seed}"
declare -A label=([ck]="ck.claim + ck.complete" [seed]="seed: SKIP LOCKED + DELETE")
# The tables are those of test/bench/sustained/setup.sql, which makes both empty; each run uses one of them.
declare -A table=([ck]=sustained [seed]=tasks)
declare -A variant_label=([idle]="an idle transaction holding an XID" [rr]="four REPEATABLE READ sessions scanning in a loop")

for v in "${variants[@]}"; do
    [[ -n ${variant_label[$v]:-} ]] || { echo "CK_HORIZON_VARIANTS: unknown variant $v (idle, rr)" >&2; exit 2; }
done
((clean >= 10 && pin >= 10 && recover >= 10)) || { echo "phases of 10 s at least" >&2; exit 2; }

sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
value() { sql -At "$@"; }
# elapsed: seconds since t0, a decimal.
elapsed() { awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.1f", a - b }'; }
# sleep_until S: sleeps until S seconds after t0 (in the background, so that a signal's trap runs at once).
sleep_pid=
sleep_until() {
    local left
    left=$(awk -v a="$EPOCHREALTIME" -v b="$t0" -v s="$1" 'BEGIN { d = b + s - a; printf "%.3f", (d > 0 ? d : 0) }')
    sleep "$left" &
    sleep_pid=$!
    wait "$sleep_pid"
    sleep_pid=
}

work=$(mktemp -d)
chmod 777 "$work"
pids=()
pin_fd=
cleanup() {
    local pid
    [[ -z $pin_fd ]] || exec {pin_fd}>&- || true
    [[ -z $sleep_pid ]] || kill "$sleep_pid" 2>/dev/null || true
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    dropdb --if-exists --force "$db" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$data"
# The code measured: the commit the library was built from just before this script (test/run.sh builds it).
built="$(git -C "$bench" rev-parse --short HEAD 2>/dev/null || echo 'no git')$(
    git -C "$bench" diff --quiet HEAD -- ../../src 2>/dev/null || echo ' + uncommitted src')"
# Only the runs made now are replaced: a run of one system (CK_HORIZON_SYSTEMS=ck) keeps the other's data, and the
# report says when and on which commit each row was measured (data/when_VARIANT_SYSTEM.txt).
for v in "${variants[@]}"; do
    for s in "${systems[@]}"; do rm -f "$data"/*_"${v}_$s".dat "$data/when_${v}_$s.txt"; done
done
dropdb --if-exists --force "$db"
createdb "$db"
sql -c 'CREATE EXTENSION concurrency_kit'
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# monitor STOPFILE OUT INDEX: a sample (sustained/sample.sql, then index.sql) at t0 and every 10 s after until STOPFILE exists.
monitor() {
    local next=0 now
    while [[ ! -e $1 ]]; do
        now=$(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%d", a - b }')
        if ((now >= next)); then
            value -F ' ' -v t0="$t0" -v claim_index="$3" -f "$sustained/sample.sql" -f "$here/index.sql" >>"$2"
            next=$((next + 10))
        fi
        sleep 0.2
    done
}

# pin_idle: the idle transaction: a psql reading from a FIFO that this shell holds open (pin_fd).
pin_idle_start() {
    mkfifo "$work/pin.fifo"
    PGAPPNAME=ck_horizon_pin psql -X -At -v ON_ERROR_STOP=1 <"$work/pin.fifo" >"$work/pin.out" 2>&1 &
    pin_pid=$!
    pids+=("$pin_pid")
    exec {pin_fd}>"$work/pin.fifo"
    echo "BEGIN; SELECT pg_current_xact_id();" >&"$pin_fd"
}
pin_idle_stop() {
    echo "ROLLBACK;" >&"$pin_fd"
    exec {pin_fd}>&-
    pin_fd=
    wait "$pin_pid" || { cat "$work/pin.out" >&2; return 1; }
    rm -f "$work/pin.fifo"
}

# rr_feed TABLE OFFSET END: the statements of one REPEATABLE READ session, until END s after t0.
rr_feed() {
    local i
    sleep "$2"
    while (($(awk -v a="$EPOCHREALTIME" -v b="$t0" -v e="$3" 'BEGIN { print (a - b < e) }'))); do
        echo "BEGIN ISOLATION LEVEL REPEATABLE READ;"
        for ((i = 0; i < 30; i++)); do
            echo "SELECT count(*) FROM $1;"
            sleep 1
            (($(awk -v a="$EPOCHREALTIME" -v b="$t0" -v e="$3" 'BEGIN { print (a - b < e) }'))) || break
        done
        echo "COMMIT;"
    done
}
pin_rr_start() {
    local s
    rr_psql=()
    for s in 0 1 2 3; do
        mkfifo "$work/rr$s.fifo"
        rr_feed "$1" "$(awk -v s="$s" 'BEGIN { print s * 7.5 }')" $((clean + pin)) >"$work/rr$s.fifo" &
        pids+=("$!")
        PGAPPNAME=ck_horizon_rr psql -X -At -v ON_ERROR_STOP=1 <"$work/rr$s.fifo" >"$work/rr$s.out" 2>&1 &
        pids+=("$!")
        rr_psql+=("$!")
    done
}
pin_rr_stop() {
    local pid s
    for pid in "${rr_psql[@]}"; do wait "$pid" || { cat "$work"/rr*.out >&2; return 1; }; done
    for s in 0 1 2 3; do rm -f "$work/rr$s.fifo"; done
}

# run VARIANT SYSTEM: the timeline for one system; leaves data/{samples,latency,wait,horizon}_VARIANT_SYSTEM.dat.
run() {
    local variant=$1 system=$2 rel=${table[$2]} tag=$1_$2 index wpid ppid mpid start
    sql -f "$sustained/setup.sql" >/dev/null
    sql -c 'DROP TABLE IF EXISTS horizon_wait' \
        -c 'CREATE UNLOGGED TABLE horizon_wait (at timestamptz NOT NULL DEFAULT clock_timestamp(), wait_ms float8 NOT NULL)' \
        -c CHECKPOINT
    if [[ $system == ck ]]; then
        index=$(value -c "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'sustained'::regclass AND indnatts = 3")
    else
        index=tasks_ready
    fi
    sleep 2
    t0=$EPOCHREALTIME
    echo "== $variant, $system: clean $clean s, pin $pin s, recover $recover s ($(date -u +%H:%M:%S) UTC)"
    rm -f "$work/stop" "$work"/log_*
    pgbench -n -M prepared -T "$total" -c "$workers" -j 1 -l --log-prefix="$work/log_$tag" \
        -D phase=0 -D id=0 -D token=0 -D wait=0 -f "$here/work_$system.sql" >"$work/workers_$tag.out" 2>&1 &
    wpid=$!
    pids+=("$wpid")
    pgbench -n -M prepared -T "$total" -c "$producers" -j 1 -R "$rate" \
        -f "$here/produce_$system.sql" >"$work/producers_$tag.out" 2>&1 &
    ppid=$!
    pids+=("$ppid")
    monitor "$work/stop" "$data/samples_$tag.dat" "$index" &
    mpid=$!
    pids+=("$mpid")

    sleep_until "$clean"
    if [[ $variant == idle ]]; then pin_idle_start; else pin_rr_start "$rel"; fi
    sleep 3
    echo "-- pin from $(elapsed) s: $(value -c "SELECT count(*) || ' session(s), oldest xmin/xid age ' ||
        coalesce(max(greatest(age(backend_xid), age(backend_xmin))), 0) FROM pg_stat_activity
        WHERE application_name LIKE 'ck_horizon_%'")"
    sleep_until $((clean + pin))
    if [[ $variant == idle ]]; then pin_idle_stop; else pin_rr_stop; fi
    echo "-- pin ended at $(elapsed) s"

    wait "$wpid" || { cat "$work/workers_$tag.out" >&2; return 1; }
    wait "$ppid" || { cat "$work/producers_$tag.out" >&2; return 1; }
    sleep 1   # the workers' backends report their statistics as they exit
    value -F ' ' -v t0="$t0" -v claim_index="$index" -f "$sustained/sample.sql" -f "$here/index.sql" >>"$data/samples_$tag.dat"
    touch "$work/stop"
    wait "$mpid"
    pids=()
    grep -h 'tps\|latency average\|failed\|number of transactions actually' "$work/producers_$tag.out" | sed 's/^/   producers: /' || true
    local log=("$work/log_$tag".*)
    cat "${log[@]}" | awk -v t0="$t0" -f "$sustained/latency.awk" >"$data/latency_$tag.dat"
    # the claims' p50/p99 over the clean phase and over the last minute of the pin
    cat "${log[@]}" | awk -v t0="$t0" -v width="$clean" -f "$sustained/latency.awk" | awk '$1 == 0' >"$data/phase_$tag.dat"
    cat "${log[@]}" | awk -v t0="$(awk -v a="$t0" -v s=$((clean + pin - 60)) 'BEGIN { printf "%.6f", a + s }')" \
        -v width=60 -f "$sustained/latency.awk" | awk '$1 == 0 { $1 = "pin" } $1 == "pin"' >>"$data/phase_$tag.dat"
    rm -f "${log[@]}"
    # the jobs' waits: p50/p99 per 10 s window (its start, as latency.awk), then over the two phases
    # (psql interpolates variables in what it reads, not in -c)
    value -F ' ' -v t0="$t0" >"$data/wait_$tag.dat" <<'SQL'
SELECT (floor((extract(epoch FROM at) - :t0) / 10) * 10)::int, count(*),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_ms)::numeric, 3),
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY wait_ms)::numeric, 3)
FROM horizon_wait GROUP BY 1 ORDER BY 1;
SQL
    value -F ' ' -v t0="$t0" -v b="$clean" -v c=$((clean + pin - 60)) -v d=$((clean + pin)) >>"$data/phase_$tag.dat" <<'SQL'
SELECT CASE WHEN at < to_timestamp(:t0 + :b) THEN 'wait_clean' ELSE 'wait_pin' END, count(*),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_ms)::numeric, 3),
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY wait_ms)::numeric, 3)
FROM horizon_wait
WHERE at >= to_timestamp(:t0) AND at < to_timestamp(:t0 + :b) OR at >= to_timestamp(:t0 + :c) AND at < to_timestamp(:t0 + :d)
GROUP BY 1 ORDER BY 1;
SQL
    # One file per run: seconds, jobs/s over the last 10 s, backlog, dead tuples, heap MB, index MB, autovacuum
    # passes, claim-index scans in the window, pages per scan, entries per scan, oldest xmin/xid age, claims (pgbench),
    # claim p50 and p99 ms, jobs claimed, wait p50 and p99 ms (the window ending at the sample).
    awk -v rel="$rel" -v lat="$data/latency_$tag.dat" -v wt="$data/wait_$tag.dat" '
        BEGIN { while ((getline line < lat) > 0) { split(line, f, " "); n[f[1]] = f[2]; p50[f[1]] = f[3]; p99[f[1]] = f[4] }
                while ((getline line < wt) > 0) { split(line, f, " "); wn[f[1]] = f[2]; w50[f[1]] = f[3]; w99[f[1]] = f[4] } }
        $2 == rel { del = $3; ins = $4; heap = $5; idx = $6; dead = $7; av = $9 }
        $2 == "index" {
            w = (int($1 / 10 + 0.5) - 1) * 10
            if (seen && $1 - t >= 5) {   # (not the last sample, just after the clients ended, if the one at the end was taken)
                scans = $4 - s0
                printf "%.1f %.0f %d %d %.2f %.2f %d %d %.1f %.1f %d %d %s %s %d %s %s\n", $1, (del - d0) / ($1 - t), ins - del, dead,
                       heap / 1048576, idx / 1048576, av, scans, (scans > 0 ? ($6 - b0) / scans : 0), (scans > 0 ? ($5 - e0) / scans : 0),
                       $7, n[w] + 0, (w in p50 ? p50[w] : "NaN"), (w in p99 ? p99[w] : "NaN"),
                       wn[w] + 0, (w in w50 ? w50[w] : "NaN"), (w in w99 ? w99[w] : "NaN")
            }
            seen = 1; t = $1; d0 = del; s0 = $4; e0 = $5; b0 = $6
        }' "$data/samples_$tag.dat" >"$data/horizon_$tag.dat"
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $built" >"$data/when_$tag.txt"
    printf -- '-- jobs/s clean | last pin minute | share of clean | of offered:%s\n' "$(summary_row "$variant" "$system" | cut -d'|' -f3-6)"
}

# summary_row VARIANT SYSTEM: one row of the report's table.
summary_row() {
    local tag=$1_$2
    awk -v name="${label[$2]}" -v when="$(cat "$data/when_$tag.txt" 2>/dev/null || echo -)" -v c="$clean" -v p="$pin" -v r="$recover" -v rate="$rate" -v ph="$data/phase_$tag.dat" '
        BEGIN { while ((getline line < ph) > 0) { split(line, f, " "); q[f[1]] = f[4] } }
        # windows that end in (10, clean], (clean + pin - 60, clean + pin], (clean + pin, clean + pin + 60]
        $1 > 15 && $1 < c + 5 { cr += $2; cn++; cs += $8; cp += $8 * $9 }
        $1 > c + p - 55 && $1 < c + p + 5 { pr += $2; pn++; ps += $8; pp += $8 * $9 }
        $1 > c + p + 5 && $1 < c + p + (r < 60 ? r : 60) + 5 { rr += $2; rn++ }
        { if ($3 > backlog) backlog = $3; if ($4 > dead) dead = $4; if ($11 > age) age = $11 }
        END {
            clean = cn ? cr / cn : 0; last = pn ? pr / pn : 0
            printf "| %s | %.0f | %.0f | %.2f | %.2f | %.0f | %\047d | %\047d | %s / %s | %s / %s | %.1f / %.1f | %s |\n", name, clean,
                   last, clean ? last / clean : 0, last / rate, rn ? rr / rn : 0, backlog, dead,
                   (0 in q ? q[0] : "-"), ("pin" in q ? q["pin"] : "-"),
                   ("wait_clean" in q ? q["wait_clean"] : "-"), ("wait_pin" in q ? q["wait_pin"] : "-"),
                   cs ? cp / cs : 0, ps ? pp / ps : 0, when }' "$data/horizon_$tag.dat"
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
for variant in "${variants[@]}"; do
    for system in "${systems[@]}"; do run "$variant" "$system"; done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# The report and the plots show every run whose data is here: those made now and those kept.
reported=()
for variant in idle rr; do
    for system in ck seed; do [[ -e $data/horizon_${variant}_$system.dat ]] && reported+=("$variant") && break; done
done
# has VARIANT SYSTEM: that run's data is here.
has() { [[ -e $data/horizon_$1_$2.dat ]]; }

# Plots: one per variant with both systems' data, the pin shaded.
for variant in "${reported[@]}"; do
    has "$variant" ck && has "$variant" seed || continue
    gnuplot -e "ck='$data/horizon_${variant}_ck.dat'; seed='$data/horizon_${variant}_seed.dat'; \
                out='$bench/horizon_$variant.png'; name='${variant_label[$variant]}'; clean=$clean; pin=$pin; \
                total=$total; rate=$rate" "$here/plot.gp"
done

{
    cat <<EOF
# The queue under a held xmin horizon: ck's queue and the seed statement, one at a time

$started, PostgreSQL $(value -c 'SHOW server_version'), $(nproc) CPUs, the throwaway cluster (test/cluster.sh),
autovacuum at the server's defaults (naptime $(value -c 'SHOW autovacuum_naptime'), cost limit
$(value -c "SELECT CASE current_setting('autovacuum_vacuum_cost_limit') WHEN '-1' THEN current_setting('vacuum_cost_limit')
                   ELSE current_setting('autovacuum_vacuum_cost_limit') END"), cost delay $(value -c 'SHOW autovacuum_vacuum_cost_delay')); ck's queue as
\`ck.create_queue\` makes it (its own autovacuum scale factors 0.02), the seed's table with no options
(test/bench/sustained/setup.sql, made anew and empty for each run). Written by test/bench/horizon/run.sh
(\`make bench-horizon\`).

Each system alone, one after the other, on the same timeline: $producers producers offer $rate jobs/s in all
(pgbench -R), one job per transaction, its payload the enqueue time; $workers workers claim one job per transaction
and complete it in the next (a 10 ms pause when the claim finds nothing); synchronous_commit off for every
client. $clean s clean, then the horizon is held for $pin s, then $recover s of recovery. Variants: **idle**: one
session takes an XID (\`SELECT pg_current_xact_id()\`) and stays idle in transaction, then rolls back; **rr**: four
REPEATABLE READ sessions, started 7.5 s apart, each scanning the queue table (\`count(*)\`) every second for 30 s
in one transaction, then again, so that overlapping snapshots hold the horizon. Load average (1, 5, 15 min) at
the start $load_before, at the end $load_after.

Columns: jobs completed per second (pg_stat_user_tables.n_tup_del) over the clean phase (its 10 s windows but
the first), over the last minute of the pin (and its share of the clean rate and of the $rate jobs/s offered) and
over the minute after the pin;
the largest backlog and dead-tuple count (n_dead_tup) seen in a sample; the claims' p99 (pgbench's transaction
log, the claim alone, empty claims included) and the jobs' wait p99 (enqueue to claim, the jobs claimed in the
phase; the workers poll, so a job that arrives while its worker sleeps its 10 ms waits up to that long even
with no backlog) in the clean phase / in the last minute of the pin; the claim index's pages (hit or read,
pg_statio_user_indexes) per index scan in the same two phases (the producers' inserts into the index count too);
when the row was measured and on which commit (a run of one system keeps the other's last row).
EOF
    for variant in "${reported[@]}"; do
        cat <<EOF

## $variant: ${variant_label[$variant]}

| queue | clean jobs/s | last pin minute jobs/s | share of clean | share of offered | recovery minute jobs/s | max backlog | max dead tuples | claim p99 ms, clean / last pin minute | wait p99 ms, clean / last pin minute | claim-index pages per scan, clean / last pin minute | measured |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
EOF
        for system in ck seed; do ! has "$variant" "$system" || summary_row "$variant" "$system"; done
        cat <<EOF

![$variant](../horizon_$variant.png)
EOF
    done
    cat <<EOF

Data: test/bench/horizon/data/horizon_VARIANT_SYSTEM.dat, one row per 10 s: seconds, jobs/s, backlog, dead tuples,
heap MB, index MB, autovacuum passes, claim-index scans, pages per scan, entries per scan, oldest xmin/xid age,
claims, claim p50 / p99 ms, jobs claimed, wait p50 / p99 ms (the samples, claim latencies and waits beside it).
EOF
} >"$results"
cat "$results"
echo
echo "results written to $results"
