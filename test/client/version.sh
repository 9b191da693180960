#!/usr/bin/env bash
# One source of truth for the version: the control file. META.json, the install script's
# name and the installed extension must agree with it. Prints TAP.
# needs: python3   (test/run.sh skips this suite where one is missing)
set -euo pipefail
cd "$(dirname "$0")/../.."

control=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" concurrency_kit.control)
meta=$(python3 -c 'import json; m = json.load(open("META.json")); print(m["version"], m["provides"]["concurrency_kit"]["version"], m["meta-spec"]["version"])')
installed=$(psql -X -At -d postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'concurrency_kit'")

n=0
check() {  # check DESCRIPTION COMMAND...
    n=$((n + 1))
    if "${@:2}"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check "control file names a version ($control)" test -n "$control"
check "META.json version and provides agree with the control file" test "$meta" = "$control $control 1.0.0"
check "install script sql/concurrency_kit--$control.sql exists" test -f "sql/concurrency_kit--$control.sql"
check "the server offers version $control" test "$installed" = "$control"
echo "1..$n"
