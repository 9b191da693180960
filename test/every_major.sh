#!/usr/bin/env bash
# `make test-all`: `make test` on every tested major (15 on the host; 17, 18 and 19 in Debian roots, see
# test/major.sh), then a line per major (tests, minutes, suites skipped for want of a tool) and one closing line
# for all. CK_MAJORS="17 19" picks majors. Fails when a major failed; a major whose root could not be made is
# reported as skipped, with the reason, and counts as neither passed nor failed.
# The majors run in CK_LANES lanes at once (default 2; 1: in turn): each major has its own cluster, port, root and
# work tree, and most of a run waits on servers and clients, so two lanes take about 60% of the time on 2 CPUs.
# Lane i runs majors i, i + lanes, ... in turn (by default 15 and 19, 17 and 18: about even on this machine); their
# lines are shown as they come, prefixed "[major]".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
read -r -a majors <<<"${CK_MAJORS:-15 17 19 18}"
lanes=${CK_LANES:-2}
[[ $lanes =~ ^[1-9][0-9]*$ ]] || { echo "CK_LANES must be a positive number, got '$lanes'" >&2; exit 2; }

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# run_major MAJOR: make test on MAJOR, its output in $logs/MAJOR.log (and shown), its status and minutes beside.
run_major() {
    local major=$1 start=$SECONDS status=0
    local prefix=
    ((lanes == 1)) || prefix="[$major] "
    echo "${prefix}======== PostgreSQL $major"
    bash "$here/run.sh" test "$major" 2>&1 | tee "$logs/$major.log" | sed -u "s/^/$prefix/" || status=${PIPESTATUS[0]}
    echo "$status $(awk -v s=$((SECONDS - start)) 'BEGIN { printf "%.1f", s / 60 }')" >"$logs/$major.status"
}

pids=()
for ((lane = 0; lane < lanes && lane < ${#majors[@]}; lane++)); do
    (
        for ((i = lane; i < ${#majors[@]}; i += lanes)); do
            run_major "${majors[i]}"
        done
    ) &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

passed=0
failed=0
summary=()
for major in "${majors[@]}"; do
    log=$logs/$major.log
    read -r status minutes <"$logs/$major.status" 2>/dev/null || { status=1; minutes=0; }
    if ((status == 3)); then
        summary+=("PostgreSQL $major: skipped: $(grep -v '^==' "$log" | tail -n 1)")
        continue
    fi
    read -r p f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$log" | tail -n 1; echo 0 0)
    # A run that failed before its closing line (build, cluster) counts as one failure.
    ((status == 0 || f > 0)) || f=1
    passed=$((passed + p))
    failed=$((failed + f))
    lacking=$(sed -n 's/^skipped on PostgreSQL [0-9]*: //p' "$log")
    summary+=("PostgreSQL $major: $p passed, $f failed in $minutes min${lacking:+; skipped for want of a tool: $lacking}")
    # What failed, named in the closing lines: a CI log's tail is often all that is kept of a run.
    if ((f > 0)); then
        while IFS= read -r line; do summary+=("    $line"); done < <(
            grep -E '^(-- .*: [0-9]+ passed, [1-9][0-9]* failed|[[:space:]]*not ok [0-9]|.* \.\.\. FAILED)' "$log" | grep -v '# *TODO' | head -n 20)
    fi
done

echo
echo "======== every major"
printf '%s\n' "${summary[@]}"
echo
echo "$passed passed, $failed failed"
((failed == 0 && passed > 0))
