#!/usr/bin/env bash
# The Citus suite: prove runs test/citus/t/*.pl (TAP, PostgreSQL::Test::Cluster; each test starts its own Citus
# cluster through CkCitus.pm) against the installed PostgreSQL of PG_CONFIG, Citus and concurrency_kit. The tests
# run from a copy in a fresh directory that the server's user owns: as root they run as postgres (the server
# refuses root). On a failure the nodes' logs are shown. Arguments: test files (default: every t/*.pl).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pg_config=${PG_CONFIG:-/usr/lib/postgresql/${CK_PG:-15}/bin/pg_config}
pgxs=$("$pg_config" --pgxs)
lib=${pgxs%/src/makefiles/pgxs.mk}

work=$(mktemp -d /tmp/ck-citus.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$here" "$work/citus"
tests=()
for test in "${@:-$here/t/*.pl}"; do
    # shellcheck disable=SC2206
    for file in $test; do tests+=("t/$(basename "$file")"); done
done
run=(env CK_CHAOS="${CK_CHAOS:-}" PG_TEST_TIMEOUT_DEFAULT="${PG_TEST_TIMEOUT_DEFAULT:-60}" PATH="$("$pg_config" --bindir):$PATH" TESTDIR="$work/citus" PG_REGRESS="$lib/src/test/regress/pg_regress"
    timeout -k 10 1200 prove -v -I "$lib/src/test/perl" -I "$work/citus" "${tests[@]}")
status=0
if [[ $EUID -eq 0 ]]; then
    chown -R postgres: "$work"
    (cd "$work/citus" && runuser -u postgres -- "${run[@]}") || status=$?
else
    (cd "$work/citus" && "${run[@]}") || status=$?
fi
if ((status != 0)); then
    shopt -s nullglob
    for log in "$work"/citus/log/* "$work"/citus/tmp_check/log/*; do
        echo "-- $log (last 40 lines)"
        grep -h "ERROR" -A3 "$log" | tail -n 20; tail -n 40 "$log"
    done
fi
exit "$status"
