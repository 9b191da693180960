# shellcheck shell=bash
# Sourced by test/chaos/fuzz.sh and privileges.sh: TAP lines counted in $n (tests) and $failed.
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() {   # check DESCRIPTION CONDITION...
    if "${@:2}"; then ok "$1"; else not_ok "$1"; fi
}
