#!/usr/bin/env bash
# test/package/clean_root.sh MAJOR: prints the path of a tarball of a clean Debian root of the suite that ships
# PostgreSQL MAJOR (15 bookworm, the host's; 17 trixie; 18 sid; 19 experimental): the server package and what it
# pulls in, nothing else, as a user has it before `apt install ./...deb`. Made with mmdebstrap, cached under
# $CK_ROOTS for CK_ROOT_MAX_DAYS days. Exit 3 (the reason printed) when it cannot be made.
set -euo pipefail
major=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=test/debian_root.sh
source "$here/../debian_root.sh"
roots=${CK_ROOTS:-/var/cache/concurrency_kit/roots}
debian_suite "$major" || { echo "no Debian suite known for PostgreSQL $major"; exit 3; }
tarball=$roots/clean-pg$major.tar
include=$(server_packages "$major")
recipe="suite=$suite sources=${sources[*]} include=$include rev=1"
if [[ -f $tarball ]] && recipe_fresh "$tarball.recipe" "$recipe"; then
    echo "$tarball"
    exit 0
fi
ensure_mmdebstrap || exit 3
mkdir -p "$roots"
log=$roots/clean-pg$major.log
if ! mmdebstrap --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' --include="${include// /,}" \
    "$base" "$roots/clean-pg$major.new.tar" "${sources[@]}" >"$log" 2>&1; then
    rm -f "$roots/clean-pg$major.new.tar"
    echo "mmdebstrap failed ($(grep -E '^E:' "$log" | tail -n 1 || true); log: $log)"
    exit 3
fi
mv "$roots/clean-pg$major.new.tar" "$tarball"
echo "$recipe" >"$tarball.recipe"
echo "$tarball"
