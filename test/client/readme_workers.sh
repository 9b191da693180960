#!/usr/bin/env bash
# The worker README.md shows for each language comes from the file the client tests run (python_worker.sh,
# go_worker.sh, node_worker.sh directly, pgbouncer.sh behind PgBouncer): the fenced code block that
# follows the line "<!-- doc-test: file PATH -->" must be byte-identical to PATH, one that follows
# "<!-- doc-test: excerpt PATH -->" a run of PATH's whole lines. Each worker is shown one way or the other.
# Prints TAP.
set -euo pipefail
source "$(dirname "$0")/lib/tap.sh"

readme=$repo_dir/README.md

# blocks_after MARKER DIR: writes the lines of each fenced block (``` or ~~~, any info string) that follows a
# line equal to MARKER, blank lines between allowed, to DIR/block.0, DIR/block.1, ...; the fence closes at a
# line of the same fence character, at least as many. Prints the number of blocks, or "broken" when
# something else follows a marker or a block is not closed.
blocks_after() {
    awk -v marker="$1" -v dir="$2" '
        state == 0 && $0 == marker { state = 1; next }
        state == 1 && /^[ \t]*$/ { next }
        state == 1 && match($0, /^(```+|~~~+)/) {
            fence = substr($0, 1, RLENGTH); f = dir "/block." n++; printf "" > f; state = 2; next
        }
        state == 1 { broken = 1; state = 0; next }
        state == 2 {
            s = $0; sub(/[ \t]+$/, "", s)
            if (length(s) >= length(fence) && s ~ (substr(fence, 1, 1) == "`" ? "^`+$" : "^~+$")) { close(f); state = 0; next }
            print > f
        }
        END { print (broken || state != 0) ? "broken" : n + 0 }' "$readme"
}

# shown_in FILE BLOCK: whether BLOCK's lines are a run of FILE's whole lines.
shown_in() {
    python3 -c '
import sys
whole, part = (open(p).read().splitlines() for p in sys.argv[1:])
sys.exit(0 if part and any(whole[i:i + len(part)] == part for i in range(len(whole) - len(part) + 1)) else 1)' "$1" "$2"
}

for file in test/client/python/worker.py test/client/go/worker/main.go test/client/node/worker.js; do
    kind=
    for k in file excerpt; do
        grep -qxF -- "<!-- doc-test: $k $file -->" "$readme" && kind+=${kind:+ }$k
    done
    if [[ $kind != file && $kind != excerpt ]]; then
        not_ok "README.md shows $file once, whole or as an excerpt (markers found: ${kind:-none})"
        continue
    fi
    rm -f "$tap_dir"/block.*
    blocks=$(blocks_after "<!-- doc-test: $kind $file -->" "$tap_dir")
    if [[ $blocks == broken ]]; then
        not_ok "README.md shows $file as it is: a closed fenced code block follows each marker"
        continue
    fi
    differ=0
    for ((i = 0; i < blocks; i++)); do
        if [[ $kind == file ]] && ! cmp -s "$tap_dir/block.$i" "$repo_dir/$file"; then
            differ=$((differ + 1))
            diff -u "$repo_dir/$file" "$tap_dir/block.$i" | head -n 20 | sed 's/^/# /' || true
        elif [[ $kind == excerpt ]] && ! shown_in "$repo_dir/$file" "$tap_dir/block.$i"; then
            differ=$((differ + 1))
            sed 's/^/# README: /' "$tap_dir/block.$i" | head -n 20
        fi
    done
    what=$([[ $kind == file ]] && echo "whole, byte for byte" || echo "an excerpt of its lines as they are")
    if ((differ == 0)); then
        ok "README.md shows $file: $what ($blocks block(s))"
    else
        not_ok "README.md shows $file: $what: $differ of $blocks block(s) differ"
    fi
done
tap_done
