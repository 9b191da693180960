#!/usr/bin/env bash
# `make test-packages [PG=N]`: the Debian package of every tested major (the arguments, else CK_MAJORS, else
# "15 17 18 19"), built and used the way a distribution's user meets it. Per major: test/package/build.sh
# (dpkg-buildpackage of a scratch copy with test/package/debian; 15 on the host, the others in their Debian roots
# through test/major.sh), lintian on the package (every finding fixed or explained in
# test/package/lintian-explained), then test/package/install_check.sh in a clean root of the suite
# (test/package/clean_root.sh). On the host (15) also the PGXN release (test/dist/check.sh). Needs root. Ends
# with "N passed, M failed"; a major whose root cannot be made is reported as skipped.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tree=$(cd "$here/../.." && pwd)
# shellcheck source=test/debian_root.sh
source "$here/../debian_root.sh"
read -r -a majors <<<"${*:-${CK_MAJORS:-15 17 18 19}}"
roots=${CK_ROOTS:-/var/cache/concurrency_kit/roots}
if [[ $EUID -ne 0 ]]; then
    echo "test-packages: dpkg-buildpackage's test cluster, apt and chroot need root" >&2
    exit 2
fi
packages=(dpkg-dev debhelper postgresql-server-dev-all lintian mmdebstrap pgxnclient unzip)
missing=()
for p in "${packages[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
if ((${#missing[@]} > 0)); then
    echo "== installing ${missing[*]}"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"; } >/dev/null
fi

work=$(mktemp -d /var/tmp/ck-packages.XXXXXX)
chmod 755 "$work"
trap 'rm -rf --one-file-system "$work"' EXIT
log=$work/tap.log
skip() { echo "$*" >>"$work/skipped"; }   # skip WHAT: said beside the totals (the loop runs in a pipeline)

# The older release users upgrade from: the last tree whose control file said 0.3.4, as `git archive` makes it.
old_tar=
if commit=$(git -C "$tree" log -1 --format=%H -S"default_version = '0.3.4'" -- concurrency_kit.control 2>/dev/null) &&
    [[ -n $commit ]] && git -C "$tree" archive -o "$work/old.tar" "$commit^"; then
    old_tar=$work/old.tar
else
    skip "the upgrade from 0.3.4 built from source (no git history here)"
fi

# lintian_check DEB: one TAP line; every finding (errors to pedantic) must be listed, with its reason, in
# lintian-explained ("tag reason").
lintian_check() {
    local deb=$1 findings unexplained tag
    findings=$(lintian --display-info --pedantic "$deb" 2>&1 | grep -E '^[EWIP]: ' | sort -u)
    unexplained=$(while read -r line; do
        [[ -n $line ]] || continue
        tag=$(awk '{ print $3 }' <<<"$line")
        grep -q "^$tag " "$here/lintian-explained" || echo "$line"
    done <<<"$findings")
    if [[ -z $unexplained ]]; then
        echo "ok - lintian on $(basename "$deb"): $(grep -c . <<<"$findings") findings, each explained in test/package/lintian-explained"
    else
        echo "not ok - lintian on $(basename "$deb"): findings not fixed or explained"
        sed 's/^/# /' <<<"$unexplained"
    fi
    [[ -z $findings ]] || sed 's/^/# lintian: /' <<<"$findings"
}

# install_in_clean_root MAJOR DEB OLD: test/package/install_check.sh in a fresh copy of the suite's clean root.
install_in_clean_root() {
    local major=$1 deb=$2 old=$3 tarball root
    if ! tarball=$(bash "$here/clean_root.sh" "$major"); then
        skip "PostgreSQL $major install check ($tarball)"
        return
    fi
    root=$work/clean-pg$major
    mkdir -p "$root"
    tar -xf "$tarball" -C "$root"
    mkdir -p "$root/work"
    cp "$deb" "$here/install_check.sh" "$root/work/"
    cp -a "$old" "$root/work/old"
    in_root "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        bash /work/install_check.sh "$major" $((54350 + major)) "/work/$(basename "$deb")" /work/old
    rm -rf --one-file-system "$root"
}

for major in "${majors[@]}"; do
    echo "======== PostgreSQL $major: package"
    if [[ $major == 15 ]]; then
        out=$work/pg15
        bash "$here/build.sh" 15 "$out" "$old_tar"
    else
        out=$roots/pg$major/work/packages
        rm -rf "$out" && mkdir -p "$out"
        [[ -z $old_tar ]] || cp "$old_tar" "$out/old.tar"
        bash "$tree/test/major.sh" "$major" package-build
        if (($? == 3)); then
            skip "PostgreSQL $major (its root could not be made)"
            continue
        fi
    fi
    deb=$(ls "$out"/postgresql-"$major"-concurrency-kit_*.deb 2>/dev/null | head -n 1)
    if [[ -z $deb ]]; then
        echo "not ok - PostgreSQL $major: no package was built, nothing to install"
        continue
    fi
    lintian_check "$deb"
    if [[ -d $out/old ]]; then
        install_in_clean_root "$major" "$deb" "$out/old"
    fi
    if [[ $major == 15 && -f $tree/test/dist/check.sh ]]; then
        echo "======== PGXN release"
        bash "$tree/test/dist/check.sh"
    fi
done 2>&1 | tee "$log"

echo
[[ ! -s $work/skipped ]] || sed 's/^/skipped: /' "$work/skipped"
passed=$(grep -cE '^[[:space:]]*ok( |$)' "$log")
failed=$(grep -cE '^[[:space:]]*not ok( |$)' "$log")
echo "$passed passed, $failed failed"
((failed == 0 && passed > 0))
