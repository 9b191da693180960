#!/usr/bin/env bash
# The race detector on programs no one wrote for it (issue 48): the guide's examples written naively
# (a stock read-check-write, a seat counter, a balance transfer, an "optimistic" update that never
# checks its version) and written correctly (an atomic UPDATE, a FOR NO KEY UPDATE read,
# ck.try_decrement, ck.try_update_if_version, the transfer through CALL ck.retry at SERIALIZABLE),
# in Python (psycopg), Go (pgx v4) and Node (pg), test/client/races/. Each program runs on 8
# connections with ck.race_detector = 'warning', 25 transactions each, in 3 rounds: every naive
# program is reported in every round, no correct one ever (counted from the CK008 warnings the
# clients received; ck.race_reports must agree). The counts are printed. Prints TAP.
# needs: psycopg go pgx node npm   (test/run.sh skips this suite where one is missing)
set -euo pipefail
source "$(dirname "$0")/lib/tap.sh"

db=ck_races
tmp=$(mktemp -d)
trap 'drop_db "$db"; rm -rf "$tmp" "$tap_dir"' EXIT
races=$client_dir/races
naive=(stock seats transfer optimistic)
correct=(atomic locked try_decrement if_version serializable)
rounds=3 clients=8 transactions=25

export PGDATABASE=$db
drop_db "$db"
createdb "$db"
sql -f "$races/setup.sql" >/dev/null

if [[ $(sql -c "SELECT setting ~ 'concurrency_kit' FROM pg_settings WHERE name = 'shared_preload_libraries'") != t ]]; then
    echo "# the detector's hooks need the library preloaded: skipped"
    echo "1..0"
    exit 0
fi

# The programs of each language, built or installed once.
langs=()
if (cd "$races/go" && GO111MODULE=off GOPROXY=off GOFLAGS='' GOPATH=/usr/share/gocode \
    GOCACHE=${GOCACHE:-$tmp/gocache} go build -o "$tmp/go-programs" .) 2>"$tmp/go.log"; then
    ok "go: the race programs build with Debian's golang-go and pgx v4"
    langs+=(go)
else
    not_ok "go: the race programs build"
    sed 's/^/# /' "$tmp/go.log"
fi
if (cd "$client_dir/node" && npm ci --no-audit --no-fund --prefer-offline) >"$tmp/npm.log" 2>&1; then
    ok "node: npm ci installed pg $(cd "$client_dir/node" && node -p 'require("pg/package.json").version')"
    langs+=(node)
else
    not_ok "node: npm ci in test/client/node"
    sed 's/^/# /' "$tmp/npm.log"
fi
langs=(python "${langs[@]}")

run_program() {  # LANG PROGRAM: prints "transactions=N reports=M errors=E"
    case $1 in
        python) timeout -k 5 120 /usr/bin/python3 "$races/programs.py" "$2" $clients $transactions ;;
        go) timeout -k 5 120 "$tmp/go-programs" "$2" $clients $transactions ;;
        node) NODE_PATH=$client_dir/node/node_modules timeout -k 5 120 node "$races/programs.js" "$2" $clients $transactions ;;
    esac
}

declare -A counts kept_counts failed
for ((round = 1; round <= rounds; round++)); do
    for lang in "${langs[@]}"; do
        for program in "${naive[@]}" "${correct[@]}"; do
            sql -f "$races/reset.sql" >/dev/null
            out=$(run_program "$lang" "$program" 2>&1) || out="failed: $out"
            reports=$(sed -n 's/.*reports=\([0-9]*\).*/\1/p' <<<"$out")
            kept=$(sql -c "SELECT count(*) FROM ck.race_reports()")
            counts[$lang/$program]+="${reports:-?} "
            kept_counts[$lang/$program]+="$kept "
            [[ -n $reports && $out == transactions=$((clients * transactions))\ * ]] || failed[$lang/$program]+="$out; "
        done
    done
done

for lang in "${langs[@]}"; do
    for program in "${naive[@]}" "${correct[@]}"; do
        key=$lang/$program
        if [[ -n ${failed[$key]:-} ]]; then
            not_ok "$lang $program: ran $rounds rounds of $clients x $transactions transactions"
            echo "# ${failed[$key]}"
            continue
        fi
        read -ra got <<<"${counts[$key]}"
        read -ra kept <<<"${kept_counts[$key]}"
        verdict=ok agree=ok
        for ((i = 0; i < rounds; i++)); do
            if [[ " ${naive[*]} " == *" $program "* ]]; then
                ((got[i] > 0)) || verdict=not_ok
            else
                ((got[i] == 0)) || verdict=not_ok
            fi
            # the ring keeps the latest 128; it holds a report exactly when a client was warned
            (((got[i] > 0) == (kept[i] > 0))) || agree=not_ok
        done
        if [[ " ${naive[*]} " == *" $program "* ]]; then
            $verdict "$lang naive $program: reported in every round ($(printf '%s, ' "${got[@]}" | sed 's/, $//') reports of $((clients * transactions)) transactions)"
        else
            $verdict "$lang correct $program: never reported ($(printf '%s, ' "${got[@]}" | sed 's/, $//') reports in $rounds rounds of $((clients * transactions)) transactions)"
        fi
        $agree "$lang $program: ck.race_reports kept reports exactly in the rounds the clients were warned (kept: ${kept[*]})"
    done
done
tap_done
