# shellcheck shell=bash
# Sourced by the client tests (test/client/*_worker.sh, pgbouncer.sh, standby.sh): TAP numbering,
# the shared database set-up and the SQL checks of each part's outcome. Needs psql.

tap_n=0
tap_fails=0
tap_dir=$(mktemp -d)
trap 'rm -rf "$tap_dir"' EXIT   # scripts that set their own EXIT trap remove it there
client_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
repo_dir=$(cd "$client_dir/../.." && pwd)

ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1"; }
not_ok() { tap_n=$((tap_n + 1)); tap_fails=$((tap_fails + 1)); echo "not ok $tap_n - $1"; }
tap_done() { echo "1..$tap_n"; ((tap_fails == 0)); }

# run_tap NAME SECONDS CMD...: runs CMD (at most SECONDS), numbering the unnumbered TAP lines it
# prints ("ok - ...", "not ok - ..."); its other output becomes comments. A non-zero exit with no
# failing line, or no test line at all, is one failure. $tap_prefix, if set, starts each
# description. CMD's output is kept in $tap_dir/last.out.
run_tap() {
    local name=$1 seconds=$2 line status=0 lines=0 failed_before=$tap_fails
    shift 2
    : >"$tap_dir/last.out"
    while IFS= read -r line; do
        printf '%s\n' "$line" >>"$tap_dir/last.out"
        case $line in
            "ok - "*) ok "${tap_prefix:-}${line#ok - }"; lines=$((lines + 1)) ;;
            "not ok - "*) not_ok "${tap_prefix:-}${line#not ok - }"; lines=$((lines + 1)) ;;
            "__status "*) status=${line#__status } ;;
            "#"*) echo "$line" ;;
            *) echo "# $line" ;;
        esac
    done < <(timeout -k 5 "$seconds" "$@" 2>&1; echo "__status $?")
    if ((lines == 0)); then
        not_ok "$name printed no test line (exit status $status)"
    elif ((status != 0 && tap_fails == failed_before)); then
        local why=
        ((status != 124)) || why=" (timed out after ${seconds}s)"
        not_ok "$name exited with status $status$why"
    fi
}

sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

# check DESCRIPTION SQL: ok when SQL returns t.
check() {
    local got
    got=$(sql -c "$2" 2>&1) || true
    if [[ $got == t ]]; then ok "$1"; else not_ok "$1"; echo "# got: ${got//$'\n'/ }"; fi
}

# setup_db DB JOBS: a fresh database DB (PGDATABASE is set to it) with test/client/lib/setup.sql.
setup_db() {
    export PGDATABASE=$1
    dropdb --if-exists --force "$1" >/dev/null 2>&1 || true
    createdb "$1"
    sql -v jobs="$2" -f "$client_dir/lib/setup.sql" >/dev/null
}

# build_go OUT TMPDIR: builds test/client/go/ckworker into OUT with Debian's Go and pgx v4
# (GOPATH mode: GO111MODULE=off, GOPROXY=off, nothing downloaded); its output goes to stderr.
build_go() {
    [[ -n ${GOCACHE:-} || -n ${HOME:-} ]] || export GOCACHE=$2/gocache   # go needs a build cache
    (cd "$client_dir/go/ckworker" &&
        GO111MODULE=off GOPROXY=off GOFLAGS='' GOPATH=/usr/share/gocode go build -o "$1" .) >&2
}

# build_short_go DIR: builds the README's Go worker (test/client/go/worker/main.go) in DIR, a copy of
# it alone, with the command its header gives (the line "//<TAB>GO111MODULE=off ... go build ..."), so
# that the recipe the README shows is the one tested. Makes DIR/worker; its output goes to stderr.
build_short_go() {
    local recipe
    recipe=$(sed -n 's|^//\t\(GO111MODULE=off .* go build .*\)$|\1|p' "$client_dir/go/worker/main.go")
    [[ -n $recipe ]] || { echo "no build command in the header of go/worker/main.go" >&2; return 1; }
    mkdir -p "$1"
    cp "$client_dir/go/worker/main.go" "$1/"
    [[ -n ${GOCACHE:-} || -n ${HOME:-} ]] || export GOCACHE=$1/gocache
    echo "$recipe" >&2
    (cd "$1" && GOPROXY=off GOFLAGS='' sh -c "$recipe") >&2
}

drop_db() { dropdb --if-exists --force "$1" >/dev/null 2>&1 || true; }

# outcome_checks LABEL WORKERS: the queue, decrement and retry parts left what they must.
outcome_checks() {
    local label=$1 workers=$2
    check "$label: every enqueued job's effect was recorded exactly once ($(sql -c 'SELECT count(*) FROM enqueued') jobs)" "
        SELECT count(*) > 0 AND bool_and(done = 1) FROM (
            SELECT (SELECT count(*) FROM effects f WHERE f.job_id = e.job_id) AS done FROM enqueued e) AS per_job"
    check "$label: the history holds each job once, completed, with the result its worker gave in the transaction of its effect (attempt and worker)" "
        SELECT count(*) > 0 AND bool_and(h.n = 1 AND h.state = 'completed' AND h.attempts = f.attempt
                                         AND h.result = jsonb_build_object('attempt', f.attempt, 'worker', f.worker))
        FROM enqueued e JOIN effects f USING (job_id)
        CROSS JOIN LATERAL (SELECT count(*) AS n, min(state) AS state, min(attempts) AS attempts, min(result::text)::jsonb AS result
                            FROM jobs_history WHERE id = e.job_id) AS h
        HAVING count(*) = (SELECT count(*) FROM enqueued)"
    check "$label: no effect of a job never enqueued; each effect carries its job's payload" "
        SELECT count(*) = 0 FROM effects f LEFT JOIN enqueued e USING (job_id) WHERE e.n IS DISTINCT FROM f.n"
    check "$label: the queue is empty, no dead letters, ck.queue_stats all zero" "
        SELECT (SELECT count(*) FROM jobs) = 0 AND (SELECT count(*) FROM jobs_dead) = 0
           AND (ready, scheduled, running, expired, dead) = (0, 0, 0, 0, 0) FROM ck.queue_stats('jobs')"
    check "$label: the slow jobs ($(sql -c "SELECT count(*) FROM enqueued WHERE kind = 'slow'")) outlived their 1 s lease and were still done on their first claim (heartbeats)" "
        SELECT count(*) > 0 AND bool_and(f.attempt = 1 AND f.held_ms >= 2000)
        FROM enqueued e JOIN effects f USING (job_id) WHERE e.kind = 'slow'"
    check "$label: each flaky job ($(sql -c "SELECT count(*) FROM enqueued WHERE kind = 'flaky'")) raised once, ck.fail said 'retry', and it was done on attempt 2" "
        SELECT count(*) > 0 AND bool_and(f.attempt = 2 AND x.fails = 1 AND x.outcome = 'retry')
        FROM enqueued e JOIN effects f USING (job_id)
        CROSS JOIN LATERAL (SELECT count(*) AS fails, min(outcome) AS outcome FROM failures WHERE job_id = e.job_id) AS x
        WHERE e.kind = 'flaky'"
    check "$label: no other job failed" "
        SELECT count(*) = 0 FROM failures JOIN enqueued USING (job_id) WHERE kind <> 'flaky'"
    check "$label: all $workers workers did jobs ($(sql -c 'SELECT count(DISTINCT worker) FROM effects'))" "
        SELECT count(DISTINCT worker) = $workers FROM effects"
    check "$label: stock after the decrements: sku 42 sold out, sku 7 untouched" "
        SELECT array_agg(qty ORDER BY sku) = '{3,0}' FROM stock"
    check "$label: exactly 20 seats taken through ck.retry" "SELECT count(*) = 20 FROM seats"
}

# dependency_checks LABEL: the workflow of the dependencies part (table workflow) ran in order. A job
# was claimed when its effect was written less the time its worker held it (held_ms, whole ms: node's
# Date.now() difference may be 1 ms over); a job it waits for completed in the transaction that wrote
# its effect, so after its done_at.
dependency_checks() {
    local label=$1
    check "$label: no job of the workflow was claimed before every job it waits for had completed ($(sql -c 'SELECT count(*) FROM workflow, unnest(after)') waits)" "
        SELECT count(*) > 0 AND bool_and((f.done_at - (f.held_ms - 1) * interval '1 ms' > d.done_at) IS TRUE)
        FROM workflow w CROSS JOIN unnest(w.after) AS a(job_id)
        LEFT JOIN effects f ON f.job_id = w.job_id LEFT JOIN effects d ON d.job_id = a.job_id"
    check "$label: every job of the workflow ran once, the fan-in job last" "
        SELECT count(f.job_id) = count(DISTINCT w.job_id) AND count(*) FILTER (WHERE w.step = 'fan-in') = 1
           AND max(f.done_at) FILTER (WHERE w.step = 'fan-in') > max(f.done_at) FILTER (WHERE w.step <> 'fan-in')
        FROM workflow w LEFT JOIN effects f USING (job_id)"
    check "$label: a fan-out job that failed once (ck.fail: 'retry') held the fan-in job back until its attempt 2 completed" "
        SELECT count(*) = 1 AND bool_and(x.outcome = 'retry' AND f.attempt = 2 AND last.done_at > f.done_at)
        FROM workflow w JOIN failures x USING (job_id) JOIN effects f USING (job_id)
        CROSS JOIN (SELECT f.done_at FROM workflow w JOIN effects f USING (job_id) WHERE w.step = 'fan-in') AS last
        WHERE w.step = 'fan-out'"
}

# short_worker LABEL CONNECT CMD...: runs a README worker (test/client/python/worker.py,
# go/worker/main.go built, node/worker.js) exactly as it is, with CONNECT's PG* settings ("PGHOST=...
# PGPORT=...", or "" for the cluster) and PGDATABASE, on a fresh database ($short_db, else ck_short): first where nothing exists
# (it must create table sent and queue emails, find no job and stop), then on 300 jobs of which 6 have
# a bad address (max_attempts 2: each fails twice, ck.try_fail, and is buried), each finish in the history
# the worker turned on, with the worker's result; then short_pause_await. Every run must exit 0
# and print exactly one line "worker N: K sent" per worker (4) and nothing else: no error, no
# traceback, no worker that stopped early. Checks in SQL go straight to the cluster.
short_worker() {
    local label=$1 connect=$2 db=${short_db:-ck_short} out=$tap_dir/short.out status runs
    shift 2
    drop_db "$db"
    createdb "$db"
    sql -d "$db" -c 'CREATE EXTENSION concurrency_kit'
    for runs in first second; do
        if [[ $runs == second ]]; then
            sql -d "$db" -c "UPDATE ck.queues SET max_attempts = 2 WHERE queue = 'emails'::regclass" \
                -c "CREATE TABLE expected AS SELECT ck.enqueue('emails', jsonb_build_object('to', t.recipient)) AS job_id, t.*
                    FROM generate_series(1, 300) AS g,
                         LATERAL (SELECT CASE WHEN g % 50 = 0 THEN 'nobody-' || g ELSE 'user' || g || '@example.com' END
                                  AS recipient) AS t" >/dev/null 2>&1 ||
                { not_ok "$label: 300 jobs enqueued into the queue emails the worker made"; return 0; }
        fi
        status=0
        # shellcheck disable=SC2086
        env $connect PGDATABASE="$db" timeout -k 5 90 "$@" >"$out" 2>&1 || status=$?
        if ((status == 0)) && [[ $(sed 's/: [0-9]* sent$//' "$out" | sort) == $'worker 1\nworker 2\nworker 3\nworker 4' ]]; then
            ok "$label, $runs run: exit 0, each of the 4 workers stopped normally ('worker N: K sent'), nothing else printed"
        else
            not_ok "$label, $runs run: exit 0, each of the 4 workers stopped normally ('worker N: K sent'), nothing else printed (exit $status)"
        fi
        sed 's/^/# /' "$out" | head -n 40
        [[ $runs == second ]] || PGDATABASE=$db check "$label: the worker created table sent and queue emails, and found no job" "
            SELECT to_regclass('sent') IS NOT NULL AND (SELECT count(*) FROM sent) = 0
               AND EXISTS (SELECT FROM ck.queues WHERE queue = 'emails'::regclass)"
    done
    local printed
    printed=$(awk '/^worker [0-9]: [0-9]+ sent$/ { n += $3 } END { print n + 0 }' "$out")
    PGDATABASE=$db check "$label: every good job ($(PGDATABASE=$db sql -c "SELECT count(*) FROM expected WHERE recipient LIKE '%@%'")) is in sent exactly once, with its recipient, on attempt 1; the workers' counts add up ($printed)" "
        SELECT count(*) = $printed AND count(*) = (SELECT count(*) FROM sent) AND bool_and(s.recipient = e.recipient AND s.attempts = 1)
        FROM expected e JOIN sent s USING (job_id) WHERE e.recipient LIKE '%@%'
        HAVING count(*) = (SELECT count(*) FROM expected WHERE recipient LIKE '%@%')"
    PGDATABASE=$db check "$label: each job with a bad address failed twice (ck.try_fail) and is in emails_dead with its error, none in sent" "
        SELECT count(*) = 6 AND count(*) = (SELECT count(*) FROM emails_dead)
           AND bool_and(d.attempts = 2 AND d.last_error LIKE 'bad address %' || e.recipient || '%')
           AND NOT EXISTS (SELECT FROM sent s JOIN expected x USING (job_id) WHERE x.recipient NOT LIKE '%@%')
        FROM expected e JOIN emails_dead d ON d.id = e.job_id WHERE e.recipient NOT LIKE '%@%'"
    PGDATABASE=$db check "$label: the queue is empty" "SELECT count(*) = 0 FROM emails"
    PGDATABASE=$db check "$label: the history (ck.set_history) holds each job once: the good ones completed with the worker's result {\"delivered_to\": recipient}, the bad ones buried with their error" "
        SELECT count(*) = 300 AND count(DISTINCT h.id) = 300
           AND bool_and(CASE WHEN e.recipient LIKE '%@%' THEN h.state = 'completed' AND h.result = jsonb_build_object('delivered_to', e.recipient)
                             ELSE h.state = 'buried' AND h.result IS NULL AND h.error LIKE 'bad address %' END)
        FROM expected e JOIN emails_history h ON h.id = e.job_id"
    short_pause_await "$label" "$connect" "$@"
}

# short_pause_await LABEL CONNECT CMD...: the README worker on a paused queue. 20 jobs enqueued, the queue
# paused (ck.pause_queue); the workers start (CMD) and a producer (CMD send await@example.com) enqueues one
# more and waits for its result (ck.await_job). Once the workers have made 8 calls of ck.claim_wait (each
# pid and query_start seen in pg_stat_activity: at most 4 at a time, so at least 4 returned empty-handed)
# and the producer's job is in the queue, nothing has been claimed (every job's attempts 0, sent unchanged)
# and all are still running (a bounded wait for those calls, not a sleep). After ck.resume_queue the
# workers drain the 21 jobs and stop, and the producer prints the result its worker gave.
short_pause_await() {
    local label="$1, paused then resumed" connect=$2 db=${short_db:-ck_short} out=$tap_dir/short.out
    local produced=$tap_dir/producer.out seen=$tap_dir/claim_waits calls=0 deadline=$((SECONDS + 40)) before
    shift 2
    local -x PGDATABASE=$db
    before=$(sql -c "SELECT count(*) FROM sent")
    sql -c "SELECT ck.pause_queue('emails')" -c "CREATE TABLE paused_jobs AS SELECT ck.enqueue('emails', jsonb_build_object('to', r)) AS job_id, r AS recipient
                                                 FROM generate_series(1, 20) AS g, LATERAL (SELECT 'paused' || g || '@example.com' AS r) AS t" >/dev/null
    # shellcheck disable=SC2086
    env $connect timeout -k 5 90 "$@" >"$out" 2>&1 &
    local workers=$!
    # shellcheck disable=SC2086
    env $connect timeout -k 5 90 "$@" send await@example.com >"$produced" 2>&1 &
    local producer=$! started=$SECONDS
    : >"$seen"
    while ((SECONDS < deadline)) && kill -0 "$workers" 2>/dev/null; do
        sql -c "SELECT pid || ' ' || query_start FROM pg_stat_activity WHERE datname = current_database()
                AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%ck.claim_wait(%'" >>"$seen"
        calls=$(sort -u "$seen" | wc -l)
        ((calls < 8)) || [[ $(sql -c "SELECT count(*) FROM emails") != 21 ]] || break
        sleep 0.1
    done
    local running=no
    ! kill -0 "$workers" 2>/dev/null || ! kill -0 "$producer" 2>/dev/null || running=yes
    check "$label: while paused the workers' $calls calls of ck.claim_wait in $((SECONDS - started)) s claimed nothing (21 jobs, all attempts 0, sent unchanged, queue_stats paused), the producer's job waiting; workers and producer still running ($running)" "
        SELECT '$running' = 'yes' AND $calls >= 8 AND count(*) = 21 AND bool_and(attempts = 0)
           AND (SELECT count(*) FROM sent) = $before AND (SELECT paused FROM ck.queue_stats('emails'))
           AND (SELECT state FROM ck.job('emails', (SELECT max(id) FROM emails))) = 'waiting'
        FROM emails"
    sql -c "SELECT ck.resume_queue('emails')" >/dev/null
    local status=0 pstatus=0 printed id
    wait "$workers" || status=$?
    wait "$producer" || pstatus=$?
    printed=$(awk '/^worker [0-9]: [0-9]+ sent$/ { n += $3 } END { print n + 0 }' "$out")
    if ((status == 0)) && [[ $(sed 's/: [0-9]* sent$//' "$out" | sort) == $'worker 1\nworker 2\nworker 3\nworker 4' ]] && ((printed == 21)); then
        ok "$label: after ck.resume_queue the workers sent the 21 jobs ($printed) and stopped normally (exit 0)"
    else
        not_ok "$label: after ck.resume_queue the workers sent the 21 jobs ($printed) and stopped normally (exit $status)"
        sed 's/^/# /' "$out" | head -n 40
    fi
    id=$(sed -n 's/^job \([0-9]*\): completed delivered to await@example\.com$/\1/p' "$produced")
    if ((pstatus == 0)) && [[ -n $id && $(wc -l <"$produced") == 1 ]]; then
        ok "$label: the producer's ck.await_job returned its job's result: $(cat "$produced")"
    else
        not_ok "$label: the producer's ck.await_job returned its job's result (exit $pstatus)"
        sed 's/^/# /' "$produced" | head -n 20
    fi
    check "$label: every job enqueued while paused is in sent once, on attempt 1, and in the history completed with its result" "
        SELECT count(*) = 21 AND bool_and(s.attempts = 1 AND h.state = 'completed' AND h.result = jsonb_build_object('delivered_to', s.recipient))
        FROM (SELECT job_id, recipient FROM paused_jobs UNION ALL SELECT ${id:-0}, 'await@example.com') AS e
        JOIN sent s USING (job_id) JOIN emails_history h ON h.id = e.job_id"
}
