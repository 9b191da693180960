#!/usr/bin/env bash
# test/package/build.sh MAJOR OUT [OLD_TAR]: builds postgresql-MAJOR-concurrency-kit the way Debian and PGDG build
# extension packages: a scratch copy of the tree with test/package/debian as its debian/, `dpkg-buildpackage -b`,
# whose pgxs sequence builds out of tree (build-MAJOR/) and runs `pg_buildext installcheck` against the built
# package. OLD_TAR (a `git archive` of an older release) is built from source and installed into OUT/old, for
# test/package/install_check.sh's upgrade. Prints TAP lines; the .deb lands in OUT. Runs on the host (15) or
# in the major's Debian root (test/major.sh MAJOR package-build).
set -uo pipefail
major=$1 out=$2 old_tar=${3:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tree=$(cd "$here/../.." && pwd)
control_version() { sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$1/concurrency_kit.control"; }   # control_version TREE
version=$(control_version "$tree")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
chmod 755 "$scratch"   # pg_buildext's test server runs as another user and reads the built package here
n=0
tap() { # tap OK DESCRIPTION: one TAP line
    n=$((n + 1))
    if [[ $1 == 0 ]]; then echo "ok $n - PostgreSQL $major: $2"; else echo "not ok $n - PostgreSQL $major: $2"; fi
}
export PG_SUPPORTED_VERSIONS=$major   # pg_buildext builds for this major only, listed by its suite or not (19)
mkdir -p "$out"

# The tree as git sees it (a root's copy is that already), debian/ from the template.
src=$scratch/concurrency-kit-$version
mkdir -p "$src"
if git -C "$tree" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$tree" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$src"
else
    cp -a "$tree/." "$src/"
fi
cp -a "$here/debian" "$src/debian"
sed -e "s/@VERSION@/$version/" -e "s/@DATE@/$(date -R)/" "$src/debian/changelog.in" >"$src/debian/changelog"
rm "$src/debian/changelog.in"
echo "$major" >"$src/debian/pgversions"
(cd "$src" && pg_buildext updatecontrol >/dev/null)
listing() { (cd "$src" && find . -path ./debian -prune -o -path "./build-*" -prune -o -type f -printf '%p %s %T@\n' | sort); }
before=$(listing)

log=$out/build.log
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -us -uc -b) >"$log" 2>&1
status=$?
regress=$(grep -cE '^(test |     )[^ ]+ +\.\.\. ok|^ok [0-9]+ ' "$log")
failing=$(grep -cE '^(test |     )[^ ]+ +\.\.\. FAILED|^not ok [0-9]+ ' "$log")
deb=$(ls "$scratch"/postgresql-"$major"-concurrency-kit_"$version"-1_*.deb 2>/dev/null | head -n 1)
tap $((status != 0 || failing > 0 || regress == 0 || ${#deb} == 0)) \
    "dpkg-buildpackage built $(basename "${deb:-no package}"); pg_buildext installcheck passed $regress regress and isolation tests, $failing failed"
if [[ $status != 0 || $failing != 0 ]]; then
    grep -E '\.\.\. FAILED|^not ok|^dpkg-buildpackage: error|^dh_[a-z_]*: error' "$log" | head -n 20 | sed 's/^/# /'
    tail -n 30 "$log" | sed 's/^/# /'
fi
after=$(listing)
changed=$(diff <(echo "$before") <(echo "$after") | grep '^[<>]')
tap $((${#changed} > 0)) "the out-of-tree build wrote nothing into the source tree"
[[ -z $changed ]] || echo "$changed" | head -n 10 | sed 's/^/# /'

# What the package holds: the library with its magic block, the control files, every script of the tree.
if [[ -n $deb ]]; then
    cp "$deb" "$out/"
    unpacked=$scratch/unpacked
    dpkg-deb -x "$deb" "$unpacked"
    missing=()
    for f in "$src"/sql/concurrency_kit--*.sql "$src"/sql/concurrency_kit--*.control "$src/concurrency_kit.control"; do
        [[ -f $unpacked/usr/share/postgresql/$major/extension/$(basename "$f") ]] || missing+=("$(basename "$f")")
    done
    tap $((${#missing[@]} > 0)) "the package holds the control file and all $(ls "$src"/sql/concurrency_kit--*.sql | wc -l) scripts of sql/"
    ((${#missing[@]} == 0)) || echo "# missing: ${missing[*]}"
    so=$unpacked/usr/lib/postgresql/$major/lib/concurrency_kit.so
    magic=$(nm -D "$so" 2>/dev/null | grep -c ' T Pg_magic_func$')
    tap $((magic != 1)) "the package's concurrency_kit.so has PostgreSQL's magic block"
fi

# The older release, built from its source in-tree (as its users did) and installed into OUT/old.
if [[ -n $old_tar ]]; then
    mkdir -p "$scratch/old"
    tar -xf "$old_tar" -C "$scratch/old"
    rm -rf "$out/old"
    make -C "$scratch/old" -j"$(nproc)" install DESTDIR="$out/old" >"$out/old.log" 2>&1
    tap $? "the older release ($(control_version "$scratch/old")) built from source"
fi
