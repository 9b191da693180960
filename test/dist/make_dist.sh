#!/bin/bash
# `make dist`: the PGXN release zip NAME-VERSION.zip, in the current directory, as `git archive` of HEAD
# (what pgxn-bundle and pgvector's `make dist` ship), META.json checked inside it (meta_check.py).
# usage: make_dist.sh SRCDIR NAME VERSION   (the Makefile passes its ck_srcdir, EXTENSION and EXTVERSION)
# CK_DIST_DIRTY=1 archives HEAD although tracked files have uncommitted changes (a warning instead of a refusal).
set -euo pipefail
src=$1 name=$2 version=$3
die() { echo "make dist: $*" >&2; exit 1; }

[ -n "$version" ] || die "no default_version in $src/$name.control"
# (the top of its own checkout: an unpacked release inside some other repository must not archive that one)
if ! subdir=$(git -C "$src" rev-parse --show-prefix 2>/dev/null) || [ -n "$subdir" ]; then
    die "$(cd "$src" && pwd) is not the top of a git checkout: the release zip is made by git archive of HEAD"
fi
# The zip is HEAD, not the working tree: an edit not committed would be missing from it, and the
# version and META.json read here could differ from the ones it ships. Untracked files never ship.
changed=$(git -C "$src" status --porcelain --untracked-files=no)
if [ -n "$changed" ]; then
    if [ "${CK_DIST_DIRTY:-}" = 1 ]; then
        echo "make dist: warning: these uncommitted changes are not in the zip (it is HEAD):" >&2
    else
        echo "make dist: tracked files have uncommitted changes; the zip would be HEAD without them:" >&2
    fi
    git -C "$src" status --short --untracked-files=no >&2
    [ "${CK_DIST_DIRTY:-}" = 1 ] || die "commit or stash them (or CK_DIST_DIRTY=1 make dist to archive HEAD anyway)"
fi

zip=$name-$version.zip
trap 'rm -f "$zip.part"' EXIT
git -C "$src" archive --format=zip --prefix="$name-$version/" HEAD >"$zip.part"
# The check reads the zip itself: what ships, including HEAD's control file and version.
python3 "$src/test/dist/meta_check.py" "$zip.part" || die "META.json fails the check above; no $zip made"
mv "$zip.part" "$zip"
echo "made $zip from HEAD $(git -C "$src" rev-parse --short HEAD)"
