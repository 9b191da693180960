#!/usr/bin/env bash
# `citus.sh ensure`: makes Citus available to the PostgreSQL major CK_PG (default 15) for the Citus suite
# (test/citus). Citus installed already (a package, or an earlier run) is used as it is; otherwise it is built
# from a release tarball and installed. Exit 0: Citus is installed. Exit 1: it is not; stdout's one line says why
# ("no Citus ..."), which the harness prints as the suite's skip reason. Progress goes to stderr.
#
# CK_CITUS_SOURCE: a directory holding citus-<release>.tar.xz files, or one such tarball. The newest release that
#   supports the major is taken (13.2.2: 15-17; 14.0.1: 16-18).
# CK_CITUS_CACHE (default /var/cache/concurrency_kit/citus): the built tree is kept in <release>-pg<major>/ there,
#   so a later run only runs its `make install` (seconds). A tree built against another minor of PostgreSQL
#   (pg_config --version) or from another tarball is built anew.
set -euo pipefail

major=${CK_PG:-15}
pg_config=/usr/lib/postgresql/$major/bin/pg_config
cache=${CK_CITUS_CACHE:-/var/cache/concurrency_kit/citus}
source=${CK_CITUS_SOURCE:-}

say() { echo "== citus: $*" >&2; }
none() { echo "no Citus $*"; exit 1; }

installed() {
    [[ -f $sharedir/extension/citus.control && -f $pkglibdir/citus.so ]]
}

# releases MAJOR: the Citus releases that build against MAJOR, newest first.
releases() {
    case $1 in
        15) echo 13.2.2 ;;
        16 | 17) echo 14.0.1 13.2.2 ;;
        18) echo 14.0.1 ;;
    esac
}

# tarball: the path of the newest tarball in $source that supports the major (empty when none).
tarball() {
    local release
    for release in $(releases "$major"); do
        if [[ -d $source && -f $source/citus-$release.tar.xz ]]; then
            echo "$source/citus-$release.tar.xz"
            return
        elif [[ -f $source && $(basename "$source") == "citus-$release.tar.xz" ]]; then
            echo "$source"
            return
        fi
    done
}

# patch TREE: what the release needs to build against this PostgreSQL. Citus 13.2.2 defines a static
# have_createdb_privilege() for majors before 16, which later minors of 15 (15.20) export from
# commands/dbcommands.h: the static definition then clashes with the server's declaration, so it goes.
patch_tree() {
    local compat=$1/src/include/pg_version_compat.h
    if grep -q 'have_createdb_privilege' "$("$pg_config" --includedir-server)/commands/dbcommands.h" &&
        grep -q '^have_createdb_privilege(void)' "$compat"; then
        perl -0pi -e 's/static inline bool\nhave_createdb_privilege\(void\)\n\{.*?\n\}\n//s' "$compat"
        say "patched $compat: the server declares have_createdb_privilege()"
    fi
}

# build TARBALL TREE: unpack, patch, configure and build into TREE (its log in TREE.log), stamped when done.
build() {
    local tarball=$1 tree=$2 stamp=$3 started=$SECONDS
    say "building $(basename "$tarball" .tar.xz) for PostgreSQL $major in $tree (log: $tree.log)"
    rm -rf "$tree"
    mkdir -p "$tree"
    tar -xJf "$tarball" -C "$tree" --strip-components=1
    patch_tree "$tree"
    # libcurl serves Citus's statistics collection only, which stays off unless a packager enables it. Without it,
    # unless the server's pg_config.h defines HAVE_LIBCURL (18 does, for OAuth): Citus then includes curl.h.
    local curl=--without-libcurl
    ! grep -q '^#define HAVE_LIBCURL 1' "$("$pg_config" --includedir-server)/pg_config.h" || curl=
    if ! (cd "$tree" && ./configure $curl PG_CONFIG="$pg_config" &&
        make -j2 with_llvm=no) >"$tree.log" 2>&1; then
        grep -E -m 5 'error|Error' "$tree.log" >&2
        none "(the build of $(basename "$tarball" .tar.xz) for PostgreSQL $major failed; log: $tree.log)"
    fi
    echo "$stamp" >"$tree/.ck-built"
    say "built in $((SECONDS - started)) s"
}

[[ ${1:-} == ensure ]] || { echo "usage: $0 ensure" >&2; exit 2; }
[[ -x $pg_config ]] || none "(no pg_config for PostgreSQL $major)"
sharedir=$("$pg_config" --sharedir)
pkglibdir=$("$pg_config" --pkglibdir)
if installed; then
    say "installed for PostgreSQL $major: $(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$sharedir/extension/citus.control")"
    exit 0
fi
[[ -n $(releases "$major") ]] || none "for PostgreSQL $major"
[[ -n $source ]] || none "(none installed for PostgreSQL $major and CK_CITUS_SOURCE unset)"
tarball=$(tarball)
[[ -n $tarball ]] || none "(no release for PostgreSQL $major in CK_CITUS_SOURCE=$source)"
[[ $EUID -eq 0 ]] || none "(building and installing it for PostgreSQL $major needs root)"
release=$(basename "$tarball" .tar.xz)
release=${release#citus-}
tree=$cache/$release-pg$major
stamp="$("$pg_config" --version) $(stat -c '%s %Y' "$tarball")"
mkdir -p "$cache"
if [[ ! -f $tree/.ck-built || $(cat "$tree/.ck-built") != "$stamp" ]]; then
    build "$tarball" "$tree" "$stamp"
fi
started=$SECONDS
if ! (cd "$tree" && make install with_llvm=no) >>"$tree.log" 2>&1; then
    grep -E -m 5 'error|Error' "$tree.log" >&2
    none "(make install of $tree failed; log: $tree.log)"
fi
say "Citus $release installed for PostgreSQL $major from $tree in $((SECONDS - started)) s"
installed || none "(installed from $tree, but $sharedir/extension/citus.control or $pkglibdir/citus.so is missing)"
