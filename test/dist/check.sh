#!/bin/bash
# The PGXN release, tested as a user gets it (issue 45): `make dist` in a fresh clone of this checkout's HEAD,
# META.json checked (and the check shown to fail on broken copies), the zip's contents, and
# `pgxn install ./concurrency_kit-VERSION.zip` building and installing it. Prints TAP ("ok N - ..."), "#" notes.
#
#   bash test/dist/check.sh
#
# Needs git, python3, unzip, make, pg_config with PGXS (PG_CONFIG picks one) and pgxnclient (Debian: pgxnclient).
# Writes only in a temporary directory: the install goes to a DESTDIR there (make takes it from the environment pgxn
# passes on), so neither the checkout nor pg_config's directories are touched. About 65 s on 2 cores, 50 of them the
# compile.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(git -C "$here" rev-parse --show-toplevel) || exit 1
ext=concurrency_kit
pg_config=${PG_CONFIG:-pg_config}
export PG_CONFIG=$pg_config
# Debian's python3 where there is one: a version manager's shim first in PATH (pyenv) costs half a second a call,
# and this runs some thirty; the check needs only the standard library.
python=python3
[ ! -x /usr/bin/python3 ] || python=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ck_dist.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS n=0 failed=0

# tap OK|FAIL DESCRIPTION [LOG]: one TAP line; a failure shows the end of LOG as "#" lines.
tap() {
    n=$((n + 1))
    if [ "$1" = OK ]; then
        echo "ok $n - $2"
    else
        failed=$((failed + 1))
        echo "not ok $n - $2"
        [ -z "${3:-}" ] || tail -n 15 "$3" | sed 's/^/#   /'
    fi
}
# check DESCRIPTION CMD...: a TAP line for whether CMD succeeds (its output kept in $tmp/log).
check() {
    local d=$1
    shift
    if "$@" >"$tmp/log" 2>&1; then tap OK "$d"; else tap FAIL "$d" "$tmp/log"; fi
}
# fails_with DESCRIPTION TEXT CMD...: CMD must fail and say TEXT (the failure must be the one meant).
fails_with() {
    local d=$1 text=$2
    shift 2
    if "$@" >"$tmp/log" 2>&1; then
        tap FAIL "$d (it succeeded)" "$tmp/log"
    elif grep -qF -- "$text" "$tmp/log"; then
        tap OK "$d"
    else
        tap FAIL "$d (did not say: $text)" "$tmp/log"
    fi
}

# --- the zip, made by make dist from a clean copy of HEAD ----------------------------------------------------------
src=$tmp/src
head=$(git -C "$top" rev-parse HEAD)
[ -z "$(git -C "$top" status --porcelain --untracked-files=no)" ] ||
    echo "# $top has uncommitted changes: this tests HEAD ${head:0:7} without them"
clone_head() {
    git init -q "$src" && git -C "$src" fetch -q "$top" "$head" && git -C "$src" checkout -q --detach "$head"
}
check "a clean clone of HEAD ${head:0:7}" clone_head
version=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$src/$ext.control")
zip=$ext-$version.zip
check "make dist makes $zip" make -s -C "$src" dist
mv "$src/$zip" "$tmp/" 2>/dev/null
# as Debian's pg_buildext builds: from a build directory, with the Makefile and sources in ..
dist_out_of_tree() {
    mkdir -p "$src/build" && make -s -C "$src/build" -f ../Makefile VPATH=.. dist && cmp "$src/build/$zip" "$tmp/$zip"
}
check "make dist out of tree (make -C build -f ../Makefile VPATH=..) makes the same zip in build/" dist_out_of_tree
check "make dist leaves nothing in the tree but the gitignored zips (git status)" \
    test -z "$(git -C "$src" status --porcelain)"

# --- META.json --------------------------------------------------------------------------------------------------
meta_check="$here/meta_check.py"
check "META.json in the zip follows PGXN Meta Spec 1.0 and the control file" "$python" "$meta_check" "$tmp/$zip"
# mutated COPY-NAME PYTHON: a copy of the zip's META.json changed by PYTHON (on the object m), as $tmp/COPY-NAME.json.
mutated() {
    unzip -p "$tmp/$zip" "$ext-$version/META.json" |
        "$python" -c 'import json, sys; m = json.load(sys.stdin); exec(sys.argv[1]); print(json.dumps(m))' "$2" \
            >"$tmp/$1.json"
}
# rejects DESCRIPTION TEXT PYTHON: the check must fail, saying TEXT, on a copy of META.json changed by PYTHON.
rejects() {
    mutated bad "$3"
    fails_with "the check rejects META.json with $1" "$2" "$python" "$meta_check" "$tmp/$zip" "$tmp/bad.json"
}
rejects "no abstract" "required key 'abstract'" "del m['abstract']"
rejects "a license the spec does not know" "not a License String" "m['license'] = 'gpl'"
rejects "an unknown top-level key" "unknown key 'homepage'" "m['homepage'] = 'https://example.org'"
rejects "a version that is not semver" "'1.0' is not a semantic version" "m['version'] = '1.0'"
rejects "a version other than the control file's" "is not $ext.control's default_version" "m['version'] = '9.9.9'"
rejects "provides at another version and script" "is not $ext.control's default_version" \
    "e = m['provides']['$ext']; e['version'] = m['version'] = '9.9.9'; e['file'] = 'sql/$ext--9.9.9.sql'"
rejects "a provides file not in the zip" "is not in the distribution" "m['provides']['$ext']['file'] = 'sql/none.sql'"
rejects "no provides abstract" "has no abstract" "del m['provides']['$ext']['abstract']"
rejects "a prereq range without X.Y.Z" "is not a version range" \
    "m['prereqs']['runtime']['requires']['PostgreSQL'] = '>= 15'"
rejects "an unknown prereq phase" "unknown key 'deploy'" "m['prereqs']['deploy'] = {'requires': {'pgtap': 0}}"
rejects "an unknown prereq relation" "unknown key 'needs'" "m['prereqs']['runtime'] = {'needs': {'PostgreSQL': 0}}"
rejects "a release_status outside the spec" "is not stable, testing or unstable" "m['release_status'] = 'beta'"
rejects "meta-spec 2" "checks spec 1.0.x only" "m['meta-spec']['version'] = '2.0.0'"
rejects "a repository with url but no type" "needs one of url+type or web" \
    "r = m['resources']['repository']; del r['type'], r['web']"
# and a check that rejected everything would pass all the above: a valid change must pass
mutated custom "m['x_ck'] = {'any': [1]}; m['prereqs']['runtime']['requires']['PostgreSQL'] = '>= 15.0.0, < 20.0.0'"
check "the check accepts x_ keys and a version range with operators" \
    "$python" "$meta_check" "$tmp/$zip" "$tmp/custom.json"

# --- make dist refuses what it should not ship -------------------------------------------------------------------
echo >>"$src/README.md"
fails_with "make dist refuses a tree with uncommitted changes" "uncommitted changes" make -s -C "$src" dist
dist_dirty() {
    CK_DIST_DIRTY=1 make -s -C "$src" dist 2>&1 | tee "$tmp/dirty.out" &&
        grep -q "warning: these uncommitted" "$tmp/dirty.out" && test -e "$src/$zip"
}
check "CK_DIST_DIRTY=1 make dist archives HEAD all the same, with a warning" dist_dirty
git -C "$src" checkout -q README.md && rm -f "$src/$zip"
mutated bad "del m['abstract']" && cp "$tmp/bad.json" "$src/META.json" &&
    git -C "$src" -c user.name=check -c user.email=check@localhost commit -qam "META.json without abstract"
fails_with "make dist fails on a committed META.json that fails the check" "no $zip made" make -s -C "$src" dist
check "and leaves no zip behind" test ! -e "$src/$zip" -a ! -e "$src/$zip.part"

# --- what the zip holds -------------------------------------------------------------------------------------------
unzip -Z1 "$tmp/$zip" | grep -v '/$' | sed "s|^$ext-$version/||" | sort >"$tmp/zip.list"
git -C "$top" ls-tree -r --name-only "$head" | sort >"$tmp/head.list"
holds() { for f; do grep -qxF -- "$f" "$tmp/zip.list" || { echo "missing $f"; return 1; }; done; }
check "the zip holds $ext.control, META.json, README.md, Makefile" holds "$ext.control" META.json README.md Makefile
scripts=$(grep -c "^sql/$ext--.*\.sql$" "$tmp/head.list")
check "the zip holds every sql/$ext--*.sql of HEAD ($scripts)" \
    test "$(grep "^sql/$ext--.*\.sql$" "$tmp/zip.list")" = "$(grep "^sql/$ext--.*\.sql$" "$tmp/head.list")"
check "the zip holds src/ ($(grep -c '^src/' "$tmp/head.list") files)" \
    test "$(grep '^src/' "$tmp/zip.list")" = "$(grep '^src/' "$tmp/head.list")"
check "the zip holds exactly HEAD's tracked files, nothing built" diff "$tmp/head.list" "$tmp/zip.list"

# --- the user's route: pgxn install of the zip ------------------------------------------------------------------
dest=$tmp/destdir
# pgxn asks for a sudo program where it cannot write pg_config's libdir, even though DESTDIR needs none: env stands
# in for it (unused as root).
if command -v pgxn >/dev/null; then
    check "pgxn install ./$zip unpacks, builds and installs (DESTDIR=\$tmp)" \
        env -C "$tmp" DESTDIR="$dest" MAKEFLAGS="-j$(nproc)" \
        pgxn install --yes --pg_config "$pg_config" --sudo env "./$zip"
else
    tap FAIL "pgxn install ./$zip: no pgxn here (Debian package pgxnclient)"
fi
# What a user gets: the library, the control file, every install/update script and old-version control file, the doc.
sharedir=$("$pg_config" --sharedir)
{
    echo "$("$pg_config" --pkglibdir)/$ext.so"
    echo "$sharedir/extension/$ext.control"
    grep -E "^sql/$ext--.*\.(sql|control)$" "$tmp/head.list" | sed "s|^sql/|$sharedir/extension/|"
    echo "$("$pg_config" --docdir)/extension/postgres_exporter_queries.yaml"
} | sort >"$tmp/expected.list"
(cd "$dest" 2>/dev/null && find . -type f | sed 's|^\.||' | sort) >"$tmp/installed.list"
check "it installs the library, $(grep -c '' "$tmp/expected.list") files in all, into pg_config's directories" \
    diff "$tmp/expected.list" "$tmp/installed.list"

echo "1..$n"
echo "# $((SECONDS - start)) s"
[ "$failed" = 0 ]
