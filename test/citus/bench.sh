#!/usr/bin/env bash
# The distributed queue's benchmark (test/citus/bench/queue.pl) on a Citus cluster of its own, as run.sh runs the
# Citus suite: prove from a copy the server's user owns. Prints jobs/s, CPU per job per node and statements to
# workers per job for a coordinator-local queue and a distributed one (clients on the coordinator, then on the workers).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pg_config=${PG_CONFIG:-/usr/lib/postgresql/${CK_PG:-15}/bin/pg_config}
pgxs=$("$pg_config" --pgxs)
lib=${pgxs%/src/makefiles/pgxs.mk}
work=$(mktemp -d /tmp/ck-citus-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$here" "$work/citus"
run=(env PATH="$("$pg_config" --bindir):$PATH" TESTDIR="$work/citus" PG_REGRESS="$lib/src/test/regress/pg_regress"
    CK_BENCH_CLIENTS="${CK_BENCH_CLIENTS:-4}" CK_BENCH_JOBS="${CK_BENCH_JOBS:-1500}"
    timeout -k 10 1200 prove -v -I "$lib/src/test/perl" -I "$work/citus" bench/queue.pl)
if [[ $EUID -eq 0 ]]; then
    chown -R postgres: "$work"
    cd "$work/citus" && runuser -u postgres -- "${run[@]}"
else
    cd "$work/citus" && "${run[@]}"
fi
