#!/usr/bin/env bash
# `make bench-horizon` (test/run.sh bench-horizon starts the throwaway cluster, then runs this): the queue under a held
# xmin horizon. For each configuration of the library (CK_HORIZON_PRELOAD, default "on off": on, in
# shared_preload_libraries; off, installed and created only; the cluster restarted into each with test/cluster.sh
# preload on|off), each variant (CK_HORIZON_VARIANTS, default "idle rr") and each system (ck: ck.claim + ck.complete;
# ckh: the same on a queue keeping its finished jobs (ck.set_history, 1.1.0: each completion also writes the job's
# record into the current hourly partition of its history); the seed: UPDATE ... (SELECT ... FOR UPDATE SKIP LOCKED)
# + DELETE), one at a time, each on a freshly made, empty
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
# Writes the data under test/bench/horizon/data/pgMAJOR/ (files *_VARIANT_SYSTEM_preload-on|off.*, and
# run_VARIANT_SYSTEM_preload-on|off.txt: when, on which code, server version, library, phases, load), then
# test/bench/horizon/report.md and the plots test/bench/horizon_VARIANT.png (PostgreSQL 15, the host's) and
# horizon_VARIANT_pgMAJOR.png (another major) from every run whose data is there: a run replaces only the rows it
# makes. The code measured is test/bench/built.sh's (CK_COMMIT in a Debian root, where there is no git).
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
declare -A label=([ck]="ck.claim + ck.complete" [ckh]="ck.claim + ck.complete, history on" [seed]="seed: SKIP LOCKED + DELETE")
# The tables are those of test/bench/sustained/setup.sql, which makes both empty; each run uses one of them. ckh runs
# ck's scripts (work_ck.sql, produce_ck.sql) on ck's queue with its history turned on.
declare -A table=([ck]=sustained [ckh]=sustained [seed]=tasks)
declare -A scripts=([ck]=ck [ckh]=ck [seed]=seed)
read -r -a configs <<<"${CK_HORIZON_PRELOAD:-on off}"
declare -A config_label=([on]="preloaded" [off]="not preloaded")
declare -A variant_label=([idle]="an idle transaction holding an XID" [rr]="four REPEATABLE READ sessions scanning in a loop")

for v in "${variants[@]}"; do
    [[ -n ${variant_label[$v]:-} ]] || { echo "CK_HORIZON_VARIANTS: unknown variant $v (idle, rr)" >&2; exit 2; }
done
for c in "${configs[@]}"; do
    [[ -n ${config_label[$c]:-} ]] || { echo "CK_HORIZON_PRELOAD: unknown configuration $c (on, off)" >&2; exit 2; }
done
for s in "${systems[@]}"; do
    [[ -n ${label[$s]:-} ]] || { echo "CK_HORIZON_SYSTEMS: unknown system $s (ck, ckh, seed)" >&2; exit 2; }
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

# The code measured: the commit the library was built from just before this script (test/run.sh builds it).
built=$(bash "$bench/built.sh")
dropdb --if-exists --force "$db"
createdb "$db"
sql -c 'CREATE EXTENSION concurrency_kit'
major=$(value -c "SELECT current_setting('server_version_num')::int / 10000")
out=$data/pg$major
mkdir -p "$out"
# Only the runs made now are replaced: a run of one system or one configuration (CK_HORIZON_SYSTEMS=ck,
# CK_HORIZON_PRELOAD=off) keeps the others' data, and the report says when, on which code and which server each
# row was measured (data/pgMAJOR/run_TAG.txt).
for c in "${configs[@]}"; do
    for v in "${variants[@]}"; do
        for s in "${systems[@]}"; do rm -f "$out"/*_"${v}_${s}_preload-$c".dat "$out/run_${v}_${s}_preload-$c.txt"; done
    done
done
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# monitor STOPFILE OUT INDEX [QUEUE]: a sample (sustained/sample.sql, then index.sql, then for ck's QUEUE path.sql) at
# t0 and every 10 s after until STOPFILE exists.
monitor() {
    local next=0 now
    local -a files=(-f "$sustained/sample.sql" -f "$here/index.sql")
    [[ -z ${4:-} ]] || files+=(-v queue="$4" -f "$here/path.sql")
    while [[ ! -e $1 ]]; do
        now=$(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%d", a - b }')
        if ((now >= next)); then
            value -F ' ' -v t0="$t0" -v claim_index="$3" "${files[@]}" >>"$2"
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

# run VARIANT SYSTEM CONFIG: the timeline for one system, the cluster in CONFIG (on, off); leaves
# data/pgMAJOR/{samples,latency,phase,wait,horizon}_TAG.dat and run_TAG.txt, TAG being VARIANT_SYSTEM_preload-CONFIG.
run() {
    local variant=$1 system=$2 config=$3 rel=${table[$2]} tag=$1_$2_preload-$3 index wpid ppid mpid start load0 path=
    sql -f "$sustained/setup.sql" >/dev/null
    sql -c 'DROP TABLE IF EXISTS horizon_wait' \
        -c 'CREATE UNLOGGED TABLE horizon_wait (at timestamptz NOT NULL DEFAULT clock_timestamp(), wait_ms float8 NOT NULL)' \
        -c CHECKPOINT
    # ckh: a history kept a day in hourly partitions (made two periods ahead by the maintenance ck.set_history
    # runs: enough for a run of up to an hour), made anew: a history outlives the queue that setup.sql drops.
    [[ $system != ckh ]] ||
        sql -c "DROP TABLE IF EXISTS sustained_history" -c "SELECT ck.set_history('sustained', '1 day', '1 hour')" >/dev/null
    if [[ $system != seed ]]; then
        index=$(value -c "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'sustained'::regclass AND indnatts = 3")
    else
        index=tasks_ready
    fi
    sleep 2
    t0=$EPOCHREALTIME
    load0=$(cut -d' ' -f1-3 /proc/loadavg)
    echo "== $variant, $system, library ${config_label[$config]}: clean $clean s, pin $pin s, recover $recover s ($(date -u +%H:%M:%S) UTC)"
    rm -f "$work/stop" "$work"/log_*
    pgbench -n -M prepared -T "$total" -c "$workers" -j 1 -l --log-prefix="$work/log_$tag" \
        -D phase=0 -D id=0 -D token=0 -D wait=0 -f "$here/work_${scripts[$system]}.sql" >"$work/workers_$tag.out" 2>&1 &
    wpid=$!
    pids+=("$wpid")
    pgbench -n -M prepared -T "$total" -c "$producers" -j 1 -R "$rate" \
        -f "$here/produce_${scripts[$system]}.sql" >"$work/producers_$tag.out" 2>&1 &
    ppid=$!
    pids+=("$ppid")
    monitor "$work/stop" "$out/samples_$tag.dat" "$index" "$([[ $system == seed ]] || echo "$rel")" &
    mpid=$!
    pids+=("$mpid")

    sleep_until "$clean"
    if [[ $variant == idle ]]; then pin_idle_start; else pin_rr_start "$rel"; fi
    sleep 3
    echo "-- pin from $(elapsed) s: $(value -c "SELECT count(*) || ' session(s), oldest xmin/xid age ' ||
        coalesce(max(greatest(age(backend_xid), age(backend_xmin))), 0) FROM pg_stat_activity
        WHERE application_name LIKE 'ck_horizon_%'")"
    sleep_until $((clean + pin - 2))
    # which way ck's claims went at the end of the pin (ck.claim_path, 0.4.0: frontier, discover, full)
    [[ $system == seed ]] ||
        path=$(value -F ': ' -c "SELECT path, reason FROM ck.claim_path('$rel')" 2>&1 | tr '\n' ' ') || path="? ($path)"
    sleep_until $((clean + pin))
    if [[ $variant == idle ]]; then pin_idle_stop; else pin_rr_stop; fi
    echo "-- pin ended at $(elapsed) s"

    wait "$wpid" || { cat "$work/workers_$tag.out" >&2; return 1; }
    wait "$ppid" || { cat "$work/producers_$tag.out" >&2; return 1; }
    sleep 1   # the workers' backends report their statistics as they exit
    value -F ' ' -v t0="$t0" -v claim_index="$index" -f "$sustained/sample.sql" -f "$here/index.sql" >>"$out/samples_$tag.dat"
    touch "$work/stop"
    wait "$mpid"
    pids=()
    grep -h 'tps\|latency average\|failed\|number of transactions actually' "$work/producers_$tag.out" | sed 's/^/   producers: /' || true
    local log=("$work/log_$tag".*)
    cat "${log[@]}" | awk -v t0="$t0" -f "$sustained/latency.awk" >"$out/latency_$tag.dat"
    # the claims' p50/p99 over the clean phase and over the last minute of the pin
    cat "${log[@]}" | awk -v t0="$t0" -v width="$clean" -f "$sustained/latency.awk" | awk '$1 == 0' >"$out/phase_$tag.dat"
    cat "${log[@]}" | awk -v t0="$(awk -v a="$t0" -v s=$((clean + pin - 60)) 'BEGIN { printf "%.6f", a + s }')" \
        -v width=60 -f "$sustained/latency.awk" | awk '$1 == 0 { $1 = "pin" } $1 == "pin"' >>"$out/phase_$tag.dat"
    rm -f "${log[@]}"
    # the jobs' waits: p50/p99 per 10 s window (its start, as latency.awk), then over the two phases
    # (psql interpolates variables in what it reads, not in -c)
    value -F ' ' -v t0="$t0" >"$out/wait_$tag.dat" <<'SQL'
SELECT (floor((extract(epoch FROM at) - :t0) / 10) * 10)::int, count(*),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_ms)::numeric, 3),
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY wait_ms)::numeric, 3)
FROM horizon_wait GROUP BY 1 ORDER BY 1;
SQL
    value -F ' ' -v t0="$t0" -v b="$clean" -v c=$((clean + pin - 60)) -v d=$((clean + pin)) >>"$out/phase_$tag.dat" <<'SQL'
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
    awk -v rel="$rel" -v lat="$out/latency_$tag.dat" -v wt="$out/wait_$tag.dat" '
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
        }' "$out/samples_$tag.dat" >"$out/horizon_$tag.dat"
    cat >"$out/run_$tag.txt" <<EOF
measured=$(date -u -d "@${t0%.*}" '+%Y-%m-%d %H:%M UTC')
code=$built
server=$(value -c 'SHOW server_version')
library=${config_label[$config]} (shared_preload_libraries '$(value -c 'SHOW shared_preload_libraries')')
phases=$clean $pin $recover
rate=$rate
load=$load0 at its start, $(cut -d' ' -f1-3 /proc/loadavg) at its end
EOF
    [[ -z $path ]] || echo "claim_path=${path% }" >>"$out/run_$tag.txt"
    printf -- '-- jobs/s clean | last pin minute | share of clean | of offered:%s\n' \
        "$(summary_row "$out" "$variant" "$system" "$config" | cut -d'|' -f5-8)"
    [[ -z $path ]] || echo "-- ck.claim_path at the end of the pin: $path"
}

# field DIR TAG KEY: a line of DIR/run_TAG.txt (KEY=...), or nothing.
field() { sed -n "s/^$3=//p" "$1/run_$2.txt" 2>/dev/null | head -n 1; }

# summary_row DIR VARIANT SYSTEM CONFIG: one row of the report's table, from that run's files in DIR (its phases and
# rate as run_TAG.txt records them).
summary_row() {
    local dir=$1 tag=$2_$3_preload-$4 phases
    local -a ph
    phases=$(field "$dir" "$tag" phases)
    read -r -a ph <<<"${phases:-$clean $pin $recover}"
    awk -v major="${dir##*/pg}" -v server="$(field "$dir" "$tag" server | cut -d' ' -f1)" -v lib="${config_label[$4]}" \
        -v name="${label[$3]}" -v samples="$dir/samples_$tag.dat" \
        -v when="$(field "$dir" "$tag" measured), $(field "$dir" "$tag" code)" \
        -v c="${ph[0]}" -v p="${ph[1]}" -v r="${ph[2]}" -v rate="$(field "$dir" "$tag" rate)" -v ph="$dir/phase_$tag.dat" '
        BEGIN { while ((getline line < ph) > 0) { split(line, f, " "); q[f[1]] = f[4] }
                if (rate == "") rate = '"$rate"'; if (server == "") server = major
                # ck.claim_path in the samples of the pin (path.sql): how many said each way
                while ((getline line < samples) > 0) {
                    split(line, f, " ")
                    if (f[2] == "path" && f[1] > c && f[1] <= c + p) { if (!(f[3] in ways)) order[++nw] = f[3]; ways[f[3]]++ }
                }
                path = ""; for (i = 1; i <= nw; i++) path = path (i > 1 ? ", " : "") order[i] " " ways[order[i]]
                if (path == "") path = "-" }
        # windows that end in (10, clean], (clean + pin - 60, clean + pin], (clean + pin, clean + pin + 60]
        $1 > 15 && $1 < c + 5 { cr += $2; cn++; cs += $8; cp += $8 * $9 }
        $1 > c + p - 55 && $1 < c + p + 5 { pr += $2; pn++; ps += $8; pp += $8 * $9 }
        $1 > c + p + 5 && $1 < c + p + (r < 60 ? r : 60) + 5 { rr += $2; rn++ }
        { if ($3 > backlog) backlog = $3; if ($4 > dead) dead = $4; if ($11 > age) age = $11 }
        END {
            clean = cn ? cr / cn : 0; last = pn ? pr / pn : 0
            printf "| %s | %s | %s | %.0f | %.0f | %.2f | %.2f | %.0f | %\047d | %\047d | %s / %s | %s / %s | %.1f / %.1f | %s | %s |\n",
                   server, lib, name, clean, last, clean ? last / clean : 0, last / rate, rn ? rr / rn : 0, backlog, dead,
                   (0 in q ? q[0] : "-"), ("pin" in q ? q["pin"] : "-"),
                   ("wait_clean" in q ? q["wait_clean"] : "-"), ("wait_pin" in q ? q["wait_pin"] : "-"),
                   cs ? cp / cs : 0, ps ? pp / ps : 0, path, when }' "$dir/horizon_$tag.dat"
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
for config in "${configs[@]}"; do
    # the cluster restarted with or without the library in shared_preload_libraries
    bash "$here/../../cluster.sh" preload "$config"
    echo "== library ${config_label[$config]}: shared_preload_libraries = '$(value -c 'SHOW shared_preload_libraries')'"
    for variant in "${variants[@]}"; do
        for system in "${systems[@]}"; do run "$variant" "$system" "$config"; done
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
server=$(value -c 'SHOW server_version')

# The report and the plots show every run whose data is here: those made now and those kept, every major.
majors=()
for dir in "$data"/pg*/; do dir=${dir%/}; majors+=("${dir##*/pg}"); done
mapfile -t majors < <(printf '%s\n' "${majors[@]}" | sort -n)
# series MAJOR VARIANT: the runs of that variant on that major whose data is here, as SYSTEM_preload-CONFIG.
series() {
    local system config
    for system in ck ckh seed; do
        for config in on off; do
            [[ ! -e $data/pg$1/horizon_$2_${system}_preload-$config.dat ]] || echo "${system}_preload-$config"
        done
    done
}

# Plots: one per major and variant, a line per system and configuration, the pin (of the first run drawn) shaded.
# Drawn where gnuplot is (not in the Debian roots: the host's run draws every major's again).
declare -A plot_of=()
for m in "${majors[@]}"; do
    for variant in idle rr; do
        mapfile -t runs < <(series "$m" "$variant")
        ((${#runs[@]} > 0)) || continue
        png=horizon_$variant$([[ $m == 15 ]] || echo "_pg$m").png
        if command -v gnuplot >/dev/null; then
            read -r -a ph <<<"$(field "$data/pg$m" "${variant}_${runs[0]}" phases)"
            gnuplot -e "dir='$data/pg$m'; variant='$variant'; runs='${runs[*]}'; out='$bench/$png'; \
                        name='${variant_label[$variant]}, PostgreSQL $m'; clean=${ph[0]:-$clean}; pin=${ph[1]:-$pin}; \
                        total=$((${ph[0]:-$clean} + ${ph[1]:-$pin} + ${ph[2]:-$recover})); \
                        rate=$(field "$data/pg$m" "${variant}_${runs[0]}" rate)" "$here/plot.gp"
        fi
        # (without gnuplot a plot drawn before is linked, if there is one: it may lack the runs made since)
        [[ ! -e $bench/$png ]] || plot_of[$m.$variant]=$png
    done
done

{
    cat <<EOF
# The queue under a held xmin horizon: ck's queue and the seed statement, one at a time, the library preloaded and not

Written by test/bench/horizon/run.sh (\`make bench-horizon\`; another major: \`bash test/major.sh N bench-horizon\`),
from every run whose data is under test/bench/horizon/data/pgMAJOR/: each row says on which server, in which
configuration of the library, when and on which code it was measured (a run replaces only the rows it makes:
CK_HORIZON_SYSTEMS, CK_HORIZON_VARIANTS, CK_HORIZON_PRELOAD). The last run: from $started to
$(date -u '+%H:%M UTC'), PostgreSQL $server, $(nproc) CPUs, load average (1, 5, 15 min) $load_before at its start,
$load_after at its end (each run's own in data/pgMAJOR/run_VARIANT_SYSTEM_preload-on|off.txt).

The throwaway cluster (test/cluster.sh), autovacuum at the server's defaults (on the last run's server: naptime
$(value -c 'SHOW autovacuum_naptime'), cost limit $(value -c "SELECT CASE current_setting('autovacuum_vacuum_cost_limit') WHEN '-1' THEN current_setting('vacuum_cost_limit')
ELSE current_setting('autovacuum_vacuum_cost_limit') END"), cost delay $(value -c 'SHOW autovacuum_vacuum_cost_delay')); ck's queue as
\`ck.create_queue\` makes it (its own autovacuum scale factors 0.02), the seed's table with no options
(test/bench/sustained/setup.sql, made anew and empty for each run); *history on* (system ckh, 1.1.0): ck's queue
with \`ck.set_history(queue, '1 day', '1 hour')\`, each completion also writing the job's record into the hour's
partition of its history (insert-only: no dead tuples there, whatever the horizon). **Library**: *preloaded*, concurrency_kit in
shared_preload_libraries; *not preloaded*, installed and created only (the cluster restarted without it by
\`test/cluster.sh preload off\`): from 0.4.0 the queue's shared state (the claim frontier, claim_wait's wake-ups,
the activity counters) is then made at the first use of a queue after the restart. The seed uses nothing of the
library: its rows in either configuration show the run-to-run noise.

Each system alone, one after the other, on the same timeline: $producers producers offer the rate in all
(pgbench -R; $rate jobs/s in the last run), one job per transaction, its payload the enqueue time; $workers workers
claim one job per transaction and complete it in the next (a 10 ms pause when the claim finds nothing);
synchronous_commit off for every client. A clean phase, then the horizon held, then recovery ($clean s, $pin s,
$recover s in the last run; each run's own in its run file). Variants: **idle**: one session takes an XID
(\`SELECT pg_current_xact_id()\`) and stays idle in transaction, then rolls back; **rr**: four REPEATABLE READ
sessions, started 7.5 s apart, each scanning the queue table (\`count(*)\`) every second for 30 s in one
transaction, then again, so that overlapping snapshots hold the horizon.

Columns: jobs completed per second (pg_stat_user_tables.n_tup_del) over the clean phase (its 10 s windows but
the first), over the last minute of the pin (and its share of the clean rate and of the jobs/s offered) and
over the minute after the pin;
the largest backlog and dead-tuple count (n_dead_tup) seen in a sample; the claims' p99 (pgbench's transaction
log, the claim alone, empty claims included) and the jobs' wait p99 (enqueue to claim, the jobs claimed in the
phase; the workers poll, so a job that arrives while its worker sleeps its 10 ms waits up to that long even
with no backlog) in the clean phase / in the last minute of the pin; the claim index's pages (hit or read,
pg_statio_user_indexes) per index scan in the same two phases (the producers' inserts into the index count too);
which way ck's claims went during the pin (\`ck.claim_path\` in each 10 s sample of the pin, from 0.4.0: how many
samples said each way; "-": not recorded); when the row
was measured and on which code (test/bench/built.sh: the commit, "+ uncommitted src" if the library's sources
differed from it).
EOF
    for variant in idle rr; do
        rows=()
        for m in "${majors[@]}"; do
            for run in $(series "$m" "$variant"); do
                rows+=("$(summary_row "$data/pg$m" "$variant" "${run%%_*}" "${run##*preload-}")")
            done
        done
        ((${#rows[@]} > 0)) || continue
        cat <<EOF

## $variant: ${variant_label[$variant]}

| PostgreSQL | library | queue | clean jobs/s | last pin minute jobs/s | share of clean | share of offered | recovery minute jobs/s | max backlog | max dead tuples | claim p99 ms, clean / last pin minute | wait p99 ms, clean / last pin minute | claim-index pages per scan, clean / last pin minute | ck.claim_path in the pin's samples | measured |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|
EOF
        printf '%s\n' "${rows[@]}"
        echo
        for m in "${majors[@]}"; do
            [[ -z ${plot_of[$m.$variant]:-} ]] || echo "![$variant, PostgreSQL $m](../${plot_of[$m.$variant]})"
        done
    done
    cat <<EOF

Data: test/bench/horizon/data/pgMAJOR/horizon_VARIANT_SYSTEM_preload-on|off.dat, one row per 10 s: seconds, jobs/s,
backlog, dead tuples, heap MB, index MB, autovacuum passes, claim-index scans, pages per scan, entries per scan,
oldest xmin/xid age, claims, claim p50 / p99 ms, jobs claimed, wait p50 / p99 ms (the samples, claim latencies and
waits beside it, and the run's record in run_VARIANT_SYSTEM_preload-on|off.txt).
EOF
} >"$results"
cat "$results"
echo
echo "results written to $results"
