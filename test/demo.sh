#!/usr/bin/env bash
# `make demo`: short acts, each showing a concurrency bug in plain SQL and the same job done with concurrency_kit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PGDATABASE=ck_demo PGOPTIONS='-c client_min_messages=warning'
clients=8
per_client=20
attempts=$((clients * per_client))

sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

# crowd SCRIPT: $clients concurrent clients each run the pgbench script test/demo/SCRIPT $per_client times.
crowd() { pgbench -n -c "$clients" -j 2 -t "$per_client" -f "$here/demo/$1" >/dev/null; }

# Act 1 ------------------------------------------------------------------------------------
units=50

# sell SCRIPT: restocks $units units of sku 1, lets the crowd buy with SCRIPT, and says what happened.
sell() {
    local sold left lost
    sql -c "TRUNCATE sales" -c "UPDATE stock SET qty = $units WHERE sku = 1"
    crowd "$1"
    read -r sold left < <(sql -F ' ' -c "SELECT (SELECT count(*) FROM sales), qty FROM stock WHERE sku = 1")
    lost=$((sold - (units - left)))
    echo "    sold $sold units of $units, $left left in stock"
    if ((sold > units)); then
        echo "    -> oversold: $((sold - units)) units sold that never existed"
    fi
    if ((lost > 0)); then
        echo "    -> lost updates: $lost sales never reached the stock count; clients that read"
        echo "       the same qty at the same moment all wrote back the same value"
    fi
    if ((sold <= units && lost == 0)); then
        echo "    -> every unit sold exactly once; the other $((attempts - sold)) attempts were refused"
    fi
}

act_last_units() {
    echo
    echo "Act 1: the last units of stock"
    echo "  $units units of sku 1 in stock; $clients clients sell one unit per transaction, $attempts attempts in all."
    sql -c "CREATE TABLE stock(sku int PRIMARY KEY, qty int NOT NULL)" -c "INSERT INTO stock VALUES (1, $units)" \
        -c "CREATE TABLE sales(id bigserial, sku int)"
    echo "  Naive: read qty; if it is > 0, write back <qty read> - 1 and record the sale."
    sell last_units_naive.sql
    echo "  concurrency_kit: ck.try_decrement('stock', 'qty', 1, 1) takes a unit only while qty >= 1, in one step."
    sell last_units_ck.sql
}

echo "concurrency_kit demo: what goes wrong when many clients write at once, and the fix"
dropdb --if-exists ck_demo
createdb ck_demo
sql -c "CREATE EXTENSION concurrency_kit"
act_last_units
