#!/usr/bin/env bash
# The README's SQL runs as written. Every ```sql block of README.md is fed, in order, to one psql session on a
# fresh database owned by a role that is not a superuser (the install section says a database owner may install),
# and what the README shows is compared with what the server answers:
#   -- result: a | b       one line per output line of the statement before it (psql -At, columns joined by " | ",
#                          NULL shown as NULL; "-- result: (no rows)" for an empty result)
#   -- error: CODE message the statement fails with that SQLSTATE and that message (a message ending in "..." is
#                          compared up to there; with no message, the SQLSTATE alone)
#   -- warning: CODE text  the statement raises that WARNING (any WARNING the README does not show fails too)
# A statement without such a comment must succeed; its output is not compared. A block preceded by
# <!-- doc-test: skip REASON --> is not run (two sessions, a server restart, a Citus cluster); the reason is printed.
# (Blocks preceded by <!-- doc-test: file PATH --> or <!-- doc-test: excerpt PATH --> are the client workers:
# test/client/readme_workers.sh checks them.)
# Why a client test and not a regress test generated from the README: the README's examples use psql itself
# (\gset), run in one session across blocks, and a drifted example should name its README line, which a
# pg_regress diff of a generated file would not. Prints TAP, one test per block (and one for the file).
# CK_README_USER=postgres runs the blocks as the superuser instead (to see the rest when installing fails).
# needs: psql python3
set -euo pipefail
cd "$(dirname "$0")/../.."

readme=${CK_README:-README.md}
db=ck_readme
owner=${CK_README_USER:-ck_readme_owner}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

psql -X -q -d postgres -v ON_ERROR_STOP=1 <<SQL
SET client_min_messages = warning;
DROP DATABASE IF EXISTS $db;
DO \$\$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ck_readme_owner') THEN
        CREATE ROLE ck_readme_owner LOGIN;
    END IF;
END \$\$;
CREATE DATABASE $db OWNER $owner;
SQL

# Split the README into statements (a statement ends on a line whose code, outside dollar quotes, ends with ";" or
# a psql \g command; a line starting with a backslash is a statement of its own) and write a psql script that
# marks each statement's output on stdout and its messages on stderr.
python3 - "$readme" "$work" <<'PY'
import json, re, sys
readme, work = sys.argv[1], sys.argv[2]
lines = open(readme, encoding="utf-8").read().split("\n")
blocks, skip, i = [], None, 0
while i < len(lines):
    line = lines[i]
    m = re.match(r"<!-- doc-test: skip (.+?) -->", line)
    if m:
        skip = m.group(1)
    if line.strip() == "```sql":
        start, body = i + 1, []
        i += 1
        while lines[i].strip() != "```":
            body.append((i + 1, lines[i]))
            i += 1
        blocks.append({"line": start, "skip": skip, "body": body})
        skip = None
    elif line.startswith("```"):
        i += 1
        while not lines[i].startswith("```"):
            i += 1
        skip = None
    i += 1

def code_part(text):
    """The line without a trailing -- comment (one outside single quotes)."""
    quoted = False
    for k, c in enumerate(text):
        if c == "'":
            quoted = not quoted
        elif not quoted and text.startswith("--", k):
            return text[:k], text[k + 2:]
    return text, None

expect_re = re.compile(r"\s*(result|error|warning):\s?(.*)$")
for b in blocks:
    stmts, cur, dollars = [], None, 0
    for lineno, text in b["body"]:
        code, comment = code_part(text)
        if dollars % 2:  # inside a dollar-quoted body: comments are the body's own
            code, comment = text, None
        if code.strip():
            if cur is None or cur["done"]:
                cur = {"line": lineno, "text": [], "done": False, "expect": []}
                stmts.append(cur)
            cur["text"].append(text if comment is None or dollars % 2 else code.rstrip())
            dollars += code.count("$$")
            c = code.rstrip()
            if dollars % 2 == 0 and (c.endswith(";") or re.search(r"\\g\w*$", c) or c.lstrip().startswith("\\")):
                cur["done"] = True
        if comment is not None and cur is not None:
            m = expect_re.match(comment)
            if m:
                cur["expect"].append((m.group(1), m.group(2).rstrip()))
    for s in stmts:
        if not s["done"]:
            sys.exit(f"{readme}:{s['line']}: a statement that does not end with ';'")
    b["stmts"] = stmts

with open(f"{work}/script.sql", "w") as f:
    f.write("\\set VERBOSITY verbose\n\\pset null NULL\n")
    n = 0
    for bi, b in enumerate(blocks):
        if b["skip"]:
            continue
        for s in b["stmts"]:
            n += 1
            s["n"] = n
            f.write(f"\\warn @@{n}\n\\echo @@{n}\n")
            f.write("\n".join(s["text"]) + "\n")
            f.write("\\if :ERROR\n\\echo @@error :SQLSTATE :LAST_ERROR_MESSAGE\n\\endif\n")
    f.write(f"\\warn @@end\n\\echo @@end\n")
json.dump(blocks, open(f"{work}/blocks.json", "w"))
PY

psql -X -q -At -F ' | ' -v ON_ERROR_STOP=0 -U "$owner" -d "$db" -f "$work/script.sql" \
    >"$work/out" 2>"$work/err" || true

python3 - "$readme" "$work" <<'PY'
import json, re, sys
readme, work = sys.argv[1], sys.argv[2]
blocks = json.load(open(f"{work}/blocks.json"))

def chunks(path):
    """Output between the @@N markers: {N: [lines]}."""
    out, cur = {}, None
    for line in open(path, encoding="utf-8").read().split("\n"):
        m = re.match(r"^@@(\d+|end)$", line)
        if m:
            cur = m.group(1)
            out[cur] = []
        elif cur is not None and line != "":
            out[cur].append(line)
    return out

out, err = chunks(f"{work}/out"), chunks(f"{work}/err")
tests = statements = compared = failed_blocks = 0
for b in blocks:
    tests += 1
    where = f"{readme}:{b['line']}"
    if b["skip"]:
        print(f"ok {tests} - {where} # SKIP {b['skip']}")
        continue
    problems = []
    for s in b["stmts"]:
        statements += 1
        key = str(s["n"])
        rows, error = [], None
        for line in out.get(key, []):
            if line.startswith("@@error "):
                error = line[len("@@error "):]
            else:
                rows.append(line)
        warnings = []
        for line in err.get(key, []):
            m = re.search(r"WARNING:  (\w{5}): (.*)$", line)
            if m:
                warnings.append(f"{m.group(1)} {m.group(2)}")
        want_rows = [v for k, v in s["expect"] if k == "result"]
        want_error = [v for k, v in s["expect"] if k == "error"]
        want_warnings = [v for k, v in s["expect"] if k == "warning"]
        first = s["text"][0].strip()
        at = f"line {s['line']} ({first[:60]})"
        if s["expect"]:
            compared += 1
        if want_error:
            code, _, message = want_error[0].partition(" ")
            got_code, _, got_message = (error or "").partition(" ")
            if message.endswith("..."):  # a long message shown by its beginning
                got_message = got_message[:len(message) - 3] + "..."
            if error is None or got_code != code or (message and got_message != message):
                problems.append(f"{at}: expected error {want_error[0]!r}, got {error or 'no error'!r}")
        elif error is not None:
            problems.append(f"{at}: unexpected error {error!r}")
        if want_rows:
            if want_rows == ["(no rows)"]:
                want_rows = []
            if rows != want_rows:
                problems.append(f"{at}: expected {want_rows!r}, got {rows!r}")
        if warnings != want_warnings:
            problems.append(f"{at}: expected warnings {want_warnings!r}, got {warnings!r}")
    if problems:
        failed_blocks += 1
        print(f"not ok {tests} - {where}: {len(b['stmts'])} statements")
        for p in problems:
            print(f"# {p}")
    else:
        print(f"ok {tests} - {where}: {len(b['stmts'])} statements")
tests += 1
if "end" in out:
    print(f"ok {tests} - psql ran the whole README to its end")
else:  # no connection, or psql stopped half-way: what did not run cannot pass
    print(f"not ok {tests} - psql did not reach the end of the README's statements")
print(f"# {statements} statements run, {compared} with a result, error or warning compared; "
      f"{failed_blocks} blocks drifted")
print(f"1..{tests}")
PY
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "DROP ROLE IF EXISTS ck_readme_owner"
