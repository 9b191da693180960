#!/usr/bin/env bash
# The code a benchmark measures, for its records: the commit checked out, then " + uncommitted src (diff XXXXXXX)"
# when what the library is built from (src/, the extension's SQL scripts, the control file, the Makefile) differs
# from that commit; XXXXXXX names that difference (git hash-object of the diff and of the untracked files' text).
# In a Debian root (test/major.sh) there is no git: major.sh works it out on the host and passes it in CK_COMMIT,
# which is printed as it is.
set -euo pipefail

if [[ -n ${CK_COMMIT:-} ]]; then
    echo "$CK_COMMIT"
    exit 0
fi
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
paths=(src 'sql/concurrency_kit--*.sql' concurrency_kit.control Makefile)
if ! commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null); then
    echo "no git"
    exit 0
fi
changes=$(
    cd "$top"
    git diff HEAD -- "${paths[@]}"
    git ls-files -o --exclude-standard -z -- "${paths[@]}" | xargs -0 -r tail -n +1
)
if [[ -z $changes ]]; then
    echo "$commit"
else
    echo "$commit + uncommitted src (diff $(printf '%s\n' "$changes" | git hash-object --stdin | cut -c1-7))"
fi
