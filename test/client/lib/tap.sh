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
        GO111MODULE=off GOPROXY=off GOFLAGS='' GOPATH="$2/gopath:/usr/share/gocode" go build -o "$1" .) >&2
}

drop_db() { dropdb --if-exists --force "$1" >/dev/null 2>&1 || true; }

# outcome_checks LABEL WORKERS: the queue, decrement and retry parts left what they must.
outcome_checks() {
    local label=$1 workers=$2
    check "$label: every enqueued job's effect was recorded exactly once ($(sql -c 'SELECT count(*) FROM enqueued') jobs)" "
        SELECT count(*) > 0 AND bool_and(done = 1) FROM (
            SELECT (SELECT count(*) FROM effects f WHERE f.job_id = e.job_id) AS done FROM enqueued e) AS per_job"
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

# readme_check LABEL FILE: every README code block marked <!-- from FILE --> is a verbatim part of FILE.
readme_check() {
    local label=$1 file=$2 content block blocks=0 missing=0 line in_block=0 marked=0
    content=$(cat "$repo_dir/$file")
    while IFS= read -r line; do
        if ((in_block)); then
            if [[ $line == '```' ]]; then
                blocks=$((blocks + 1))
                block=${block%$'\n'}
                [[ $content == *"$block"* ]] || { missing=$((missing + 1)); echo "# not in $file: ${block%%$'\n'*} ..."; }
                in_block=0
            else
                block+=$line$'\n'
            fi
        elif [[ $line == "<!-- from $file -->" ]]; then
            marked=1
        elif ((marked)) && [[ $line == '```'* ]]; then
            in_block=1 marked=0 block=
        fi
    done <"$repo_dir/README.md"
    if ((blocks > 0 && missing == 0)); then
        ok "$label: the README's examples ($blocks blocks) are the code the test runs ($file)"
    else
        not_ok "$label: the README's examples ($blocks blocks) are the code the test runs ($file)"
    fi
}
