# shellcheck shell=bash
# Sourced by test/client/queue_workers.sh and upgrade.sh: one TAP line per assertion, counted in
# $n (tests) and $fails (failures).

n=0
fails=0
# assert DESCRIPTION COMMAND...: one TAP line, ok when COMMAND succeeds; what it prints follows as
# comments (the first 80 lines).
assert() {
    local out status=0
    n=$((n + 1))
    out=$("${@:2}" 2>&1) || status=$?
    if ((status == 0)); then
        echo "ok $n - $1"
    else
        echo "not ok $n - $1"
        fails=$((fails + 1))
    fi
    [[ -z $out ]] || awk 'NR <= 80 { print "# " $0 } END { if (NR > 80) print "# ... and " NR - 80 " more lines" }' <<<"$out"
    return 0
}
