#!/usr/bin/env bash
# ck.await_job returns when the commit that finishes the job comes, not at max_wait: woken by
# that commit (the median of 5 within 50 ms of the completer's COMMIT with the shared state,
# preloaded or not, as claim_wait.sh measures), with the result the worker gave; a completion
# that rolls back wakes nobody into a wrong answer (the job is still running at max_wait); a
# cancel, a burial, complete_many, complete_and_claim and a claim that buries an expired or
# timed-out last attempt wake it too (each wakes the awaiters of the jobs it finished, or of every job when it
# does not know which, signal/wakeup.hpp), and a completion of another job of the queue does
# not end the wait. make test runs this in both configurations. Prints TAP.
set -euo pipefail

db=ck_await_job
trap 'dropdb --if-exists "$db" >/dev/null 2>&1 || true' EXIT
dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
sql() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
sql -c "CREATE EXTENSION concurrency_kit" -c "SELECT FROM ck.create_queue('jobs', lease => '1 hour', max_attempts => 1)" \
    -c "SELECT FROM ck.set_history('jobs', '1 day')"

n=0
check() {  # check DESCRIPTION COMMAND...
    n=$((n + 1))
    if "${@:2}"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}

# finish_while_awaited HOW: a job is claimed, an awaiter waits up to 10 s, and 0.3 s later the
# job is finished (HOW: complete, fail, cancel, rollback, complete_many, complete_and_claim,
# expire: claimed with a 0.1 s lease that a later claim finds expired and buries; timeout: the
# same with a job timeout of 0.1 s; other: another job of the queue is completed). Prints the awaiter's state, result
# and the milliseconds from the finisher's last moment before COMMIT to the awaiter's return.
finish_while_awaited() {
    local how=$1 id token out finish committed other_id other_token
    local lease=NULL
    [[ $how == expire ]] && lease="'100 ms'"
    read -r id token < <(sql -F ' ' -c "SELECT ck.enqueue('jobs', '{}')" -c "SELECT id, lease_token FROM ck.claim('jobs', 1, $lease)" | tail -n 1)
    out=$(mktemp)
    local wait=10
    [[ $how == rollback || $how == other ]] && wait=1
    sql -F ' ' -c "SELECT state, coalesce(replace(result::text, ' ', ''), '-'), extract(epoch FROM clock_timestamp())
                   FROM ck.await_job('jobs', $id, '$wait seconds')" >"$out" &
    local awaiter=$!
    sleep 0.3
    case $how in
        complete) finish="SELECT FROM ck.complete('jobs', $id, $token, '{\"answer\": $id}')" ;;
        fail) finish="SELECT FROM ck.fail('jobs', $id, $token, 'no')" ;;
        cancel) finish="SELECT FROM ck.cancel('jobs', $id)" ;;
        rollback) finish="SELECT FROM ck.complete('jobs', $id, $token)" ;;
        complete_many) finish="SELECT FROM ck.complete_many('jobs', ARRAY[$id], ARRAY[$token], ARRAY['{\"many\": $id}'::jsonb])" ;;
        complete_and_claim) finish="SELECT FROM ck.complete_and_claim('jobs', $id, $token, 1, NULL, '{\"next\": $id}')" ;;
        expire | timeout) finish="SELECT FROM ck.claim('jobs')" ;;
        other) read -r other_id other_token < <(sql -F ' ' -c "SELECT ck.enqueue('jobs', '{}')" -c "SELECT id, lease_token FROM ck.claim('jobs')" | tail -n 1)
               finish="SELECT FROM ck.complete('jobs', $other_id, $other_token)" ;;
    esac
    local end=COMMIT
    [[ $how == rollback ]] && end=ROLLBACK
    committed=$(sql -c "BEGIN" -c "$finish" -c "SELECT extract(epoch FROM clock_timestamp())" -c "$end")
    wait "$awaiter"
    awk -v c="$committed" -v id="$id" '{ printf "%s %s %.1f %s\n", $1, $2, ($3 - c) * 1000, id }' "$out"
    rm -f "$out"
}

bound_ms=50
times=()
wrong=0
for i in 1 2 3 4 5; do
    read -r state result ms id < <(finish_while_awaited complete)
    [[ $state == completed && $result == "{\"answer\":$id}" ]] || wrong=$((wrong + 1))
    times+=("$ms")
done
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
echo "# 5 awaiters woken by a completion, ms after the completer began to commit: ${times[*]}"
check "a completion's commit wakes the awaiter with the state and result every time ($wrong of 5 wrong), within $bound_ms ms (median: $median ms)" \
    awk -v m="$median" -v w="$wrong" -v b="$bound_ms" 'BEGIN { exit !(w == 0 && m < b) }'
read -r state result ms id < <(finish_while_awaited fail)
check "a burial by ck.fail wakes it: buried (after $ms ms)" awk -v s="$state" -v m="$ms" 'BEGIN { exit !(s == "buried" && m < 1000) }'
read -r state result ms id < <(finish_while_awaited cancel)
check "a cancel wakes it: cancelled (after $ms ms)" awk -v s="$state" -v m="$ms" 'BEGIN { exit !(s == "cancelled" && m < 1000) }'
read -r state result ms id < <(finish_while_awaited rollback)
check "a completion rolled back leaves it running until max_wait (1 s): $state" test "$state" = running
read -r state result ms id < <(finish_while_awaited complete_many)
check "ck.complete_many wakes it with its result: $state $result (after $ms ms)" \
    awk -v s="$state" -v r="$result" -v want="{\"many\":$id}" -v m="$ms" 'BEGIN { exit !(s == "completed" && r == want && m < 1000) }'
read -r state result ms id < <(finish_while_awaited complete_and_claim)
check "ck.complete_and_claim wakes it with its result: $state $result (after $ms ms)" \
    awk -v s="$state" -v r="$result" -v want="{\"next\":$id}" -v m="$ms" 'BEGIN { exit !(s == "completed" && r == want && m < 1000) }'
read -r state result ms id < <(finish_while_awaited expire)
check "a claim burying its expired last attempt wakes it: $state (after $ms ms)" \
    awk -v s="$state" -v m="$ms" 'BEGIN { exit !(s == "buried" && m < 1000) }'
read -r state result ms id < <(finish_while_awaited other)
check "a completion of another job of the queue leaves it running until max_wait (1 s): $state" test "$state" = running
sql -c "UPDATE ck.queues SET timeout = '100 ms' WHERE queue = 'jobs'::regclass"
read -r state result ms id < <(finish_while_awaited timeout)
error=$(sql -c "SELECT error FROM ck.job('jobs', $id)")
check "a claim burying a timed-out last attempt wakes it: $state, $error (after $ms ms)" \
    awk -v s="$state" -v e="$error" -v m="$ms" 'BEGIN { exit !(s == "buried" && e == "timeout" && m < 1000) }'
echo "1..$n"
