#!/usr/bin/env bash
# The tree's shape, checked before anything is built (make test's first suite). Prints TAP ("ok N - ...", "#" notes):
#  - the floors of src/ (issue 46): every #include points down the floors declared in src/README.md, and self-tests
#    that the check fails on planted copies of src/ (test/layers.py --tap; `make layers` runs the check alone);
#  - the tests' names: a regress test is told from an install script by its name, and no regress test shares a name
#    with an isolation spec (their expected outputs would share a name: expected/X.out, test/expected/X.out); every
#    test has its expected output and every expected output its test.
#
#   bash test/layers.sh
#
# Needs bash and python3 (standard library only); writes only temporary copies of src/. About a second.
set -uo pipefail
shopt -s nullglob

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
ext=concurrency_kit
python=python3
[[ ! -x /usr/bin/python3 ]] || python=/usr/bin/python3

n=0 failed=0
# tap OK|FAIL DESCRIPTION [NOTE...]: one TAP line; a failure shows the NOTEs as "#" lines.
tap() {
    n=$((n + 1))
    if [[ $1 == OK ]]; then
        echo "ok $n - $2"
    else
        failed=$((failed + 1))
        echo "not ok $n - $2"
        shift 2
        local note
        for note in "$@"; do echo "#   $note"; done
    fi
}

cd "$top" || exit 1

# The floors: test/layers.py numbers its TAP lines from 1; they come first.
floors=$("$python" "$here/layers.py" --tap src 2>&1)
status=$?
echo "$floors"
n=$(grep -cE '^(not )?ok [0-9]' <<<"$floors")
failed=$(grep -cE '^not ok [0-9]' <<<"$floors")
if ((status != 0 && failed == 0)); then
    tap FAIL "test/layers.py --tap exited with status $status"
fi

# names FILE...: the test names of FILEs (their basenames without the last suffix), one a line, sorted.
names() {
    local f
    for f in "$@"; do
        f=${f##*/}
        echo "${f%.*}"
    done | sort -u
}
# outputs FILE...: the test names of expected outputs: X for X.out, and for an alternative output X_N.out
# (pg_regress's variants) when X.out is there too.
outputs() {
    local f name
    for f in "$@"; do
        name=${f##*/}
        name=${name%.out}
        if [[ $name =~ ^(.+)_[0-9]+$ && -e ${f%/*}/${BASH_REMATCH[1]}.out ]]; then
            name=${BASH_REMATCH[1]}
        fi
        echo "$name"
    done | sort -u
}
# joined LIST: LIST's lines joined by ", ".
joined() { paste -sd, - <<<"$1" | sed 's/,/, /g'; }

# The install and upgrade scripts (the Makefile's DATA: sql/concurrency_kit--*.sql) and the regress inputs, the rest
# of sql/*.sql; the REGRESS lists of the Makefile, for every major (each `REGRESS =`/`+=` line and its continuations).
install_scripts=$(names sql/"$ext"--*.sql)
regress_inputs=$(comm -23 <(names sql/*.sql) <(echo "$install_scripts"))
regress_list=$(awk '/^REGRESS[ \t]*[:+]?=/ { on = 1; sub(/^REGRESS[ \t]*[:+]?=/, "") }
                    on { line = $0; on = sub(/\\$/, "", line); print line }' Makefile | tr -s ' \t' '\n' |
    grep -v '^$' | sort -u)
specs=$(names test/specs/*.spec)

bad=$(grep -vE "^$ext--[0-9][0-9.]*[0-9](--[0-9][0-9.]*[0-9])?$" <<<"$install_scripts")
if [[ -z $bad ]]; then
    count=$(wc -l <<<"$install_scripts")
    tap OK "sql/$ext--*.sql: $count install and upgrade scripts, each named $ext--VERSION or $ext--FROM--TO"
else
    tap FAIL "sql/$ext--*.sql is for install and upgrade scripts (make install copies them)" \
        "not a $ext--VERSION or $ext--FROM--TO: $(joined "$bad")"
fi

bad=$(grep -E "^($ext|\\\$\(EXTENSION\))--" <<<"$regress_list")
if [[ -z $bad ]]; then
    tap OK "no regress test in the Makefile's REGRESS is named like an install script ($ext--*)"
else
    tap FAIL "no regress test in the Makefile's REGRESS is named like an install script ($ext--*)" "$(joined "$bad")"
fi

missing=$(comm -23 <(echo "$regress_list") <(echo "$regress_inputs"))
unlisted=$(comm -13 <(echo "$regress_list") <(echo "$regress_inputs"))
if [[ -z $missing && -z $unlisted ]]; then
    tap OK "the Makefile's REGRESS lists name the $(wc -l <<<"$regress_inputs") regress inputs in sql/"
else
    tap FAIL "the Makefile's REGRESS lists name the regress inputs in sql/" \
        ${missing:+"in REGRESS, no sql/X.sql: $(joined "$missing")"} \
        ${unlisted:+"sql/X.sql in no REGRESS list (or an install script not named $ext--*): $(joined "$unlisted")"}
fi

# pairs WHAT TESTS OUTPUTS TEST_PATTERN OUTPUT_PATTERN: every test has an expected output and every output its test.
pairs() {
    local what=$1 tests=$2 outs=$3 lacking stray
    lacking=$(comm -23 <(echo "$tests") <(echo "$outs"))
    stray=$(comm -13 <(echo "$tests") <(echo "$outs"))
    if [[ -z $lacking && -z $stray ]]; then
        tap OK "every $4 has its $5 and every $5 its $4 ($(wc -l <<<"$tests") $what)"
    else
        tap FAIL "every $4 has its $5 and every $5 its $4" \
            ${lacking:+"no $5 for: $(joined "$lacking")"} ${stray:+"no $4 for: $(joined "$stray")"}
    fi
}
pairs "regress tests" "$regress_inputs" "$(outputs expected/*.out)" sql/X.sql expected/X.out
pairs "isolation specs" "$specs" "$(outputs test/expected/*.out)" test/specs/X.spec test/expected/X.out

shared=$(comm -12 <(echo "$regress_inputs") <(echo "$specs"))
if [[ -z $shared ]]; then
    tap OK "no regress test (sql/X.sql) shares its name with an isolation spec (test/specs/X.spec)"
else
    tap FAIL "no regress test (sql/X.sql) shares its name with an isolation spec (test/specs/X.spec)" \
        "both: $(joined "$shared")"
fi
shared=$(comm -12 <(names expected/*.out) <(names test/expected/*.out))
if [[ -z $shared ]]; then
    tap OK "no expected output of the regress tests shares its name with one of the isolation specs"
else
    tap FAIL "no expected output of the regress tests shares its name with one of the isolation specs" \
        "expected/X.out and test/expected/X.out: $(joined "$shared")"
fi

echo "1..$n"
((failed == 0))
