#!/usr/bin/env bash
# `make test-all`: `make test` on every tested major in turn (15 on the host; 17, 18 and 19 in Debian roots, see
# test/major.sh), then a line per major (tests, minutes, suites skipped for want of a tool) and one closing line
# for all. CK_MAJORS="17 19" picks majors. Fails when a major failed; a major whose root could not be made is
# reported as skipped, with the reason, and counts as neither passed nor failed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
read -r -a majors <<<"${CK_MAJORS:-15 17 18 19}"

passed=0
failed=0
summary=()
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

for major in "${majors[@]}"; do
    log=$logs/$major.log
    start=$SECONDS
    status=0
    echo "======== PostgreSQL $major"
    bash "$here/run.sh" test "$major" 2>&1 | tee "$log" || status=$?
    minutes=$(awk -v s=$((SECONDS - start)) 'BEGIN { printf "%.1f", s / 60 }')
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
done

echo
echo "======== every major"
printf '%s\n' "${summary[@]}"
echo
echo "$passed passed, $failed failed"
((failed == 0 && passed > 0))
