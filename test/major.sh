#!/usr/bin/env bash
# `make test PG=N` (and demo, bench, chaos) for a PostgreSQL major the host does not ship: runs test/run.sh MODE
# inside a Debian root of the suite that packages it (17 trixie, 18 sid, 19 experimental), made with mmdebstrap
# and cached under $CK_ROOTS. The root is rebuilt when missing, half-made, older than CK_ROOT_MAX_DAYS or made
# by another recipe (MODE root: only that). Needs root (chroot, mounts); nothing but Debian packages is
# downloaded. Exit 3: the root could not be made (the reason is printed): the major is skipped, not passed.
set -euo pipefail

major=${1:-}
mode=${2:-test}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
roots=${CK_ROOTS:-/var/cache/concurrency_kit/roots}

# shellcheck source=test/debian_root.sh
source "$here/debian_root.sh"
if [[ $major == 15 ]] || ! debian_suite "$major"; then
    echo "major.sh: no Debian suite known for PostgreSQL '$major' (17, 18 or 19)" >&2
    exit 2
fi
if [[ $EUID -ne 0 ]]; then
    echo "major.sh: PostgreSQL $major runs in a chroot: run as root" >&2
    exit 2
fi

# What the root holds. The server and the build tools are needed; the rest serves suites that skip without it
# (build-essential and debhelper: make test-packages, whose dpkg-buildpackage checks the build dependencies).
required=("postgresql-$major" "postgresql-server-dev-$major" g++ make)
optional=("postgresql-$major-pgtap" libtap-parser-sourcehandler-pgtap-perl python3 python3-psycopg
    golang-go golang-github-jackc-pgx-v4-dev pgbouncer nodejs npm sqlsmith ca-certificates procps
    prometheus-postgres-exporter curl "postgresql-$major-cron"
    perl libipc-run-perl xz-utils liblz4-dev libzstd-dev libkrb5-dev libicu-dev
    libcurl4-openssl-dev build-essential debhelper postgresql-server-dev-all)
# sid holds no PostgreSQL 19 yet: the server and its client library come from experimental.
[[ $suite != experimental ]] || required=($(server_packages "$major") "postgresql-server-dev-$major/experimental"
    libpq-dev/experimental g++ make)
recipe="suite=$suite mirror=$url required=${required[*]} optional=${optional[*]} rev=1"
root=$roots/pg$major
port=$((54300 + major))

# hook DIR: mmdebstrap's customize hook; installs the optional packages the suite has, lists the others in
# DIR/.ck-missing. A policy-rc.d keeps the packages' daemons (pgbouncer) from starting in the root.
hook() {
    local dir=$1 p have=()
    printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
    chmod +x "$dir/usr/sbin/policy-rc.d"
    : >"$dir/.ck-missing"
    for p in "${optional[@]}"; do
        if chroot "$dir" apt-cache show "$p" >/dev/null 2>&1; then have+=("$p"); else echo "$p" >>"$dir/.ck-missing"; fi
    done
    chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${have[@]}"
    rm -f "$dir/usr/sbin/policy-rc.d"
    grep -qx "postgresql-$major-pgtap" "$dir/.ck-missing" && borrow_pgtap "$dir" || true
}

# borrow_pgtap DIR: a suite whose newest major has no pgTAP package yet (19 in experimental) gets the extension
# files of the next older major's package: pgTAP is SQL and PL/pgSQL only, with no library to build.
borrow_pgtap() {
    local dir=$1 older
    for ((older = major - 1; older >= 15; older--)); do
        chroot "$dir" apt-cache show "postgresql-$older-pgtap" >/dev/null 2>&1 || continue
        chroot "$dir" sh -c "cd /tmp && apt-get download -q postgresql-$older-pgtap &&
            dpkg-deb -x postgresql-$older-pgtap_*.deb pgtap &&
            cp pgtap/usr/share/postgresql/$older/extension/pgtap* /usr/share/postgresql/$major/extension/ &&
            rm -rf pgtap postgresql-$older-pgtap_*.deb" || return 1
        sed -i "s/^postgresql-$major-pgtap\$/postgresql-$major-pgtap (its SQL taken from postgresql-$older-pgtap)/" \
            "$dir/.ck-missing"
        return 0
    done
    return 1
}

fresh() {
    recipe_fresh "$root/.ck-recipe" "$recipe"
}

# remove DIR: a root's whole tree, but never through a mount point (a /dev bound in by a run killed half-way).
remove() {
    rm -rf --one-file-system "$1"
}

# make_root: mmdebstrap into a new directory, the optional packages the suite has added in its customize hook
# (daemons kept from starting), then moved into place. Prints why on failure.
make_root() {
    local new=$root.new log=$roots/pg$major.log
    ensure_mmdebstrap || return 1
    remove "$new"
    mkdir -p "$roots"
    echo "== making the $suite root for PostgreSQL $major in $root ($url)"
    if ! unshare --mount --propagation private mmdebstrap --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
        --include="$(IFS=,; echo "${required[*]}")" --customize-hook="bash $here/major.sh $major hook \"\$1\"" \
        "$base" "$new" "${sources[@]}" >"$log" 2>&1; then
        remove "$new"
        echo "mmdebstrap failed ($(grep -E '^E:' "$log" | tail -n 1 || true); log: $log)"
        return 1
    fi
    echo "$recipe" >"$new/.ck-recipe"
    remove "$root"
    mv "$new" "$root"
}

if [[ $mode == hook ]]; then
    hook "$3"
    exit
fi
if ! fresh && ! make_root; then
    echo "== PostgreSQL $major: skipped: its $suite root could not be made"
    exit 3
fi
[[ $mode != root ]] || exit 0   # make or refresh the root only
missing=$(paste -sd ' ' "$root/.ck-missing")
echo "== PostgreSQL $major in the $suite root $root${missing:+ (the suite lacks: $missing)}"

# The tree as git sees it (tracked and untracked files, not ignored ones: no build outputs) is copied in afresh.
work=$root/work/concurrency_kit
remove "$work"
mkdir -p "$work"
(cd "$here/.." && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$work"

# Citus is built inside the root (test/citus.sh) from the tarballs CK_CITUS_SOURCE names, copied in afresh.
citus_source=
if [[ -n ${CK_CITUS_SOURCE:-} && -e $CK_CITUS_SOURCE ]]; then
    remove "$root/work/citus-source"
    mkdir -p "$root/work/citus-source"
    if [[ -d $CK_CITUS_SOURCE ]]; then
        cp "$CK_CITUS_SOURCE"/citus-*.tar.xz "$root/work/citus-source/" 2>/dev/null || true
        citus_source=/work/citus-source
    else
        cp "$CK_CITUS_SOURCE" "$root/work/citus-source/"
        citus_source=/work/citus-source/$(basename "$CK_CITUS_SOURCE")
    fi
fi

# The host's own certificate authorities (a proxy's, say) are trusted in the root too, for npm.
if [[ -d /usr/local/share/ca-certificates ]] && ! diff -rq /usr/local/share/ca-certificates \
    "$root/usr/local/share/ca-certificates" >/dev/null 2>&1; then
    remove "$root/usr/local/share/ca-certificates"
    cp -r /usr/local/share/ca-certificates "$root/usr/local/share/"
    chroot "$root" update-ca-certificates >/dev/null 2>&1 || true
fi

# MODE package-build builds the Debian package instead (test/package/build.sh), into the root's /work/packages,
# where test/package/run.sh put the older release's source.
command=(bash test/run.sh "$mode")
[[ $mode != package-build ]] || command=(bash test/package/build.sh "$major" /work/packages /work/packages/old.tar)

in_root "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    CI="${CI:-}" CK_PG="$major" CK_PORT="${CK_PORT:-$port}" CK_IN_ROOT=1 CK_BENCH_ONLY="${CK_BENCH_ONLY:-}" \
    CK_BENCH_SECONDS="${CK_BENCH_SECONDS:-}" CK_CITUS_SOURCE="$citus_source" \
    CK_BENCH_SYNC="${CK_BENCH_SYNC:-}" CK_BENCH_CLIENTS="${CK_BENCH_CLIENTS:-}" CK_BENCH_PRELOAD="${CK_BENCH_PRELOAD:-}" CK_HORIZON_PRELOAD="${CK_HORIZON_PRELOAD:-}" \
    CK_HORIZON_SYSTEMS="${CK_HORIZON_SYSTEMS:-}" CK_HORIZON_VARIANTS="${CK_HORIZON_VARIANTS:-}" \
    CK_HORIZON_CLEAN="${CK_HORIZON_CLEAN:-}" CK_HORIZON_PIN="${CK_HORIZON_PIN:-}" \
    CK_HORIZON_RECOVER="${CK_HORIZON_RECOVER:-}" CK_HORIZON_RATE="${CK_HORIZON_RATE:-}" \
    CK_COMMIT="$(bash "$here/bench/built.sh")" \
    bash -c 'cd /work/concurrency_kit && exec "$@"' run "${command[@]}"
