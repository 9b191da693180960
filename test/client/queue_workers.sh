#!/usr/bin/env bash
# Eight workers drain a queue of 3,000 jobs with a 2-second lease while some of them stall past
# their lease and some crash mid-job; every job must be completed exactly once, and only by the
# worker holding its current lease. Prints TAP. Needs psql and bash only.
#
# A worker is a bash loop driving one psql process (a coprocess, so one connection per worker):
#   claim one job (the claim is logged in `claims` in the same statement), work 2-12 ms, then in
#   ONE transaction: INSERT INTO completions, SELECT ck.try_complete(...); COMMIT if it returned true,
#   ROLLBACK otherwise.
# Now and then a worker
#   - stalls: sleeps to the end of its lease, waits until another worker has claimed the job
#     again, then tries to complete it with its old token (logged in stale_attempts): must be
#     refused, and no completion recorded;
#   - crashes after the claim, or after ck.complete returned true but before COMMIT: it kills its
#     psql (the server sees the connection drop; an open transaction rolls back) and a new worker
#     takes its place, so that the pool stays at eight.
# Jobs are scheduled 5 ms apart (15 s in all; the workers keep up, with room to spare on two
# cores), so that a job whose lease ran out is claimed again within moments: an expired job is
# ordered by its lease end among the others, after any backlog of jobs that were ready before.
set -euo pipefail

export PGDATABASE=ck_workers PGOPTIONS='-c client_min_messages=warning'
jobs=3000
workers=8
lease_s=2
spacing_ms=5
deadline_s=90                      # hard stop for the workers; the run takes about 15 s
per_mille_stall=3                  # rates per claimed job; besides, on its 20th job slot 1
per_mille_crash_claimed=4          # stalls, slot 2 crashes after claiming and slot 3 before
per_mille_crash_completed=3        # COMMIT (once each), so that every kind happens in every run
forced=([1]=stall [2]=crash_claimed [3]=crash_completed)

tmp=$(mktemp -d)
slot_pids=()
cleanup() {
    local pid
    for pid in "${slot_pids[@]}"; do kill -- "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    dropdb --if-exists --force ck_workers 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

dropdb --if-exists --force ck_workers
createdb ck_workers
sql <<SQL
CREATE EXTENSION concurrency_kit;
SELECT FROM ck.create_queue('jobs', lease => '$lease_s seconds', max_attempts => 20);
CREATE TABLE enqueued (job_id bigint PRIMARY KEY);
-- Every claim, in the claiming statement. claimed_at is read after the claim, so it is no earlier
-- than the time the claim compared run_at with: a re-claim must have claimed_at >= the previous
-- claim's lease_until.
CREATE TABLE claims (job_id bigint, lease_token bigint, attempt int, lease_until timestamptz, worker text,
                     claimed_at timestamptz DEFAULT clock_timestamp());
-- No unique constraint: a duplicate must show up in the counts, not as an error.
CREATE TABLE completions (job_id bigint, lease_token bigint, worker text, done_at timestamptz DEFAULT now());
-- A stalled worker's late complete: holder is the token it saw on the job just before trying
-- (its own: not claimed again yet; 0: gone, completed by its new holder), accepted is what
-- ck.complete returned.
CREATE TABLE stale_attempts (job_id bigint, lease_token bigint, worker text, holder bigint, accepted boolean);
CREATE TABLE crashes (job_id bigint, lease_token bigint, worker text, point text);
INSERT INTO enqueued
SELECT ck.enqueue('jobs', jsonb_build_object('n', g), now() + g * interval '$spacing_ms ms')
FROM generate_series(1, $jobs) AS g;
SQL

mkfifo "$tmp/nap"
exec {nap_fd}<>"$tmp/nap"          # never written: read -t on it sleeps without a fork
nap() { read -r -t "$1" -u "$nap_fd" _ || true; }
# in_time: true until the deadline (no $(...): a fork per call would cost more than the work).
now_ms() { now=${EPOCHREALTIME/./}; now=$((now / 1000)); }
in_time() { now_ms; ((now < stop_at)); }
now_ms
stop_at=$((now + deadline_s * 1000))

# q SQL: runs SQL on the worker's psql; the result rows (fields split by |) land in reply. Returns 1
# when psql is gone. An error is logged to $tmp/errors.
q() {
    local line
    reply=()
    printf '%s;\n\\echo __end__\n' "$1" >&"${db[1]}" || return 1
    while IFS= read -r line <&"${db[0]}"; do
        [[ $line == __end__ ]] && return 0
        [[ $line =~ ^(psql:.*)?(ERROR|FATAL|PANIC): ]] && echo "$name: $line (in: $1)" >>"$tmp/errors"
        reply+=("$line")
    done
    return 1
}

# crash POINT ID TOKEN: logs the crash, then kills this worker's psql: the server sees the connection drop.
crash() {
    echo "$2	$3	$name	$1" >>"$tmp/crashes"
    kill -KILL "$db_pid"
    wait "$db_pid" 2>/dev/null
}

# worker SLOT GENERATION: claims and completes jobs until the queue is empty, the deadline passes or it crashes.
worker() {
    local slot=$1 gen=$2 n=0 id token r fate ok holder give_up work
    name="w$slot.$gen"
    RANDOM=$((slot * 7919 + gen * 104729 + 1))
    coproc db { exec psql -X -q -At -v ON_ERROR_STOP=0; }
    db_pid=$db_PID
    while in_time; do
        q "WITH c AS (SELECT * FROM ck.claim('jobs', 1))
           INSERT INTO claims (job_id, lease_token, attempt, lease_until, worker)
           SELECT id, lease_token, attempts, lease_until, '$name' FROM c
           RETURNING job_id, lease_token" || return 0
        if ((${#reply[@]} == 0)); then
            q "SELECT count(*) FROM jobs" || return 0
            if [[ ${reply[0]:-} == 0 ]]; then
                touch "$tmp/drained"
                break
            fi
            nap 0.02
            continue
        fi
        id=${reply[0]%%|*} token=${reply[0]#*|}
        n=$((n + 1))
        r=$((RANDOM % 1000))
        if ((n == 20)) && [[ -n ${forced[slot]:-} && ! -e $tmp/forced.$slot ]]; then
            touch "$tmp/forced.$slot"
            fate=${forced[slot]}
        elif ((r < per_mille_stall)); then fate=stall
        elif ((r < per_mille_stall + per_mille_crash_claimed)); then fate=crash_claimed
        elif ((r < per_mille_stall + per_mille_crash_claimed + per_mille_crash_completed)); then fate=crash_completed
        else fate=work
        fi

        if [[ $fate == crash_claimed ]]; then
            crash after_claim "$id" "$token"
            return 0
        elif [[ $fate == stall ]]; then
            # Until about the end of the lease (from 0.2 s before to 0.3 s after), then until someone
            # else holds the job (or has completed it) and our token is stale, for at most $lease_s
            # more seconds (then it completes: legitimately if no one has claimed the job again,
            # since a lease that ran out is not taken away until then).
            printf -v work '%d.%03d' $((lease_s - 1)) $((800 + RANDOM % 500))
            nap "$work"
            now_ms
            give_up=$((now + lease_s * 1000))
            holder=$token
            while ((holder == token && now < give_up)) && in_time; do
                q "SELECT coalesce((SELECT lease_token FROM jobs WHERE id = $id), 0)" || return 0
                holder=${reply[0]}
                ((holder != token)) || nap 0.002
            done
        else
            printf -v work '0.%03d' $((RANDOM % 11 + 2))    # 2-12 ms
            nap "$work"
        fi

        q "BEGIN;
           INSERT INTO completions (job_id, lease_token, worker) VALUES ($id, $token, '$name');
           SELECT ck.try_complete('jobs', $id, $token)" || return 0
        ok=
        ((${#reply[@]} == 0)) || ok=${reply[-1]}
        if [[ $fate == crash_completed && $ok == t ]]; then
            crash before_commit "$id" "$token"
            return 0
        fi
        if [[ $ok == t ]]; then q COMMIT || return 0; else q ROLLBACK || return 0; fi
        if [[ $fate == stall ]]; then
            q "INSERT INTO stale_attempts VALUES ($id, $token, '$name', $holder, '$ok' = 't')" || return 0
        fi
    done
    printf '\\q\n' >&"${db[1]}"
    wait "$db_pid" 2>/dev/null
}

# slot SLOT: runs workers in this slot, a new one (new connection) after each crash, until done.
slot() {
    set +e                          # a worker's trouble shows in the checks, not as an exit
    local gen=0
    while [[ ! -e $tmp/drained ]] && in_time; do
        worker "$1" "$gen"
        gen=$((gen + 1))
    done
    echo "$gen" >"$tmp/generations.$1"
}

now_ms
started=$now
for s in $(seq 1 $workers); do
    slot "$s" 2>>"$tmp/worker.log" &
    slot_pids+=($!)
done
wait "${slot_pids[@]}"
slot_pids=()
now_ms
elapsed_ms=$((now - started))
connections=$(cat "$tmp"/generations.* | awk '{ n += $1 } END { print n + 0 }')
touch "$tmp/crashes" "$tmp/errors"
sql -c "\\copy crashes FROM '$tmp/crashes'"

. "$(dirname "${BASH_SOURCE[0]}")/lib/assert.sh"
# is_true SQL: succeeds when SQL returns t; otherwise prints what it returned.
is_true() {
    local got
    got=$(sql -c "$1" 2>&1) || true
    [[ $got == t ]] || { echo "got: $got"; return 1; }
}
# value SQL: one value, for the descriptions.
value() { sql -c "$1"; }
no_errors() { [[ ! -s $tmp/errors ]] || { cat "$tmp/errors"; return 1; }; }
check() { assert "$1" is_true "$2"; }   # check DESCRIPTION SQL

crashes=$(value "SELECT count(*) FROM crashes")
echo "# $jobs jobs, $workers workers, lease ${lease_s}s: drained in $((elapsed_ms / 1000)).$((elapsed_ms % 1000 / 100))s," \
    "$connections worker connections in all"
echo "# $(value "SELECT format('%s claims, %s stale completes tried, %s crashes after claim, %s after complete before commit',
    (SELECT count(*) FROM claims), (SELECT count(*) FROM stale_attempts),
    (SELECT count(*) FROM crashes WHERE point = 'after_claim'), (SELECT count(*) FROM crashes WHERE point = 'before_commit'))")"

assert "the workers drained the queue before the ${deadline_s}s deadline" test -e "$tmp/drained"
assert "no worker statement failed" no_errors
check "every job enqueued ($jobs) was completed exactly once" "
    SELECT count(*) = $jobs AND bool_and(done = 1) FROM (
        SELECT (SELECT count(*) FROM completions c WHERE c.job_id = e.job_id) AS done FROM enqueued e) AS per_job"
check "no completion of a job that was never enqueued" "
    SELECT count(*) = 0 FROM completions c WHERE NOT EXISTS (SELECT FROM enqueued e WHERE e.job_id = c.job_id)"
check "the queue is empty: no job left, none dead, ck.queue_stats all zero" "
    SELECT (SELECT count(*) FROM jobs) = 0 AND (SELECT count(*) FROM jobs_dead) = 0
       AND (ready, scheduled, running, expired, dead) = (0, 0, 0, 0, 0) FROM ck.queue_stats('jobs')"
check "every completion came from the job's current lease (its last claim's token)" "
    SELECT count(*) = 0 FROM completions c
    WHERE c.lease_token <> (SELECT max(lease_token) FROM claims l WHERE l.job_id = c.job_id)"
check "no job was leased to two workers at once: each re-claim came after the previous lease ended" "
    SELECT count(*) = 0 FROM (
        SELECT claimed_at, lag(lease_until) OVER (PARTITION BY job_id ORDER BY lease_token) AS previous_until
        FROM claims) AS c
    WHERE claimed_at < previous_until"
check "some stalled workers tried to complete after their job was claimed again ($(value "
    SELECT format('%s of %s stalls', count(*) FILTER (WHERE holder <> lease_token), count(*)) FROM stale_attempts"))" "
    SELECT count(*) > 0 FROM stale_attempts WHERE holder <> lease_token"
check "every such stale complete was refused" "
    SELECT bool_and(NOT accepted) FROM stale_attempts WHERE holder <> lease_token"
check "some of them came while another worker held the job, not after it was gone ($(value "
    SELECT count(*) FROM stale_attempts WHERE holder NOT IN (0, lease_token)"))" "
    SELECT count(*) > 0 FROM stale_attempts WHERE holder NOT IN (0, lease_token)"
check "no completion was recorded by a refused complete; each such job was completed once, under a later lease" "
    SELECT count(*) = 0 FROM stale_attempts s
    WHERE NOT accepted AND EXISTS (SELECT FROM completions c WHERE c.job_id = s.job_id AND c.lease_token = s.lease_token)
       OR NOT accepted AND (SELECT count(*) FROM completions c
                            WHERE c.job_id = s.job_id AND c.lease_token > s.lease_token) <> 1"
check "workers crashed after claiming ($(value "SELECT count(*) FROM crashes WHERE point = 'after_claim'")) and after a successful complete, before COMMIT ($(value "SELECT count(*) FROM crashes WHERE point = 'before_commit'"))" "
    SELECT count(DISTINCT point) = 2 FROM crashes"
check "each crashed worker's job was claimed again (next attempt) and completed once, under the new lease" "
    SELECT count(*) = 0 FROM crashes x
    WHERE EXISTS (SELECT FROM completions c WHERE c.job_id = x.job_id AND c.lease_token = x.lease_token)
       OR (SELECT count(*) FROM completions c WHERE c.job_id = x.job_id AND c.lease_token > x.lease_token) <> 1
       OR NOT EXISTS (SELECT FROM claims l JOIN claims k ON k.job_id = l.job_id AND k.attempt = l.attempt + 1
                      WHERE l.job_id = x.job_id AND l.lease_token = x.lease_token)"
assert "the pool stayed at $workers: each of the $crashes crashed workers was replaced by a new connection" \
    test "$connections" -eq $((workers + crashes))
if ((fails > 0)) && [[ -s $tmp/worker.log ]]; then
    sed 's/^/# worker stderr: /' "$tmp/worker.log" | head -n 20
fi
echo "1..$n"
