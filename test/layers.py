#!/usr/bin/env python3
"""The floors of the source tree (issue 46): every include of src/ points down, never up or sideways.

    python3 test/layers.py [SRC]           check SRC (default: the src/ beside this test/); exit 0 when clean
    python3 test/layers.py --tap [SRC]     the same as TAP lines, then self-tests that show the check failing
    make layers                            the first form, on the source tree the Makefile is in

The floors are declared in SRC/README.md, in the fenced code block whose info string is `floors`, in the
section "## The floors of the source tree":

    ```floors
    module.cpp
    audits guards locks queue retry rows
    base
    ```

Each line is one floor, the top floor first; its floor number is its line in the block (floor 1 is the top,
so a higher number is a lower floor). A line holds one or more rooms separated by spaces; a room is a folder
under SRC (`queue/engine`, `base`) or a file there (`module.cpp`), named relative to SRC. A source file
(*.cpp, *.hpp, *.c, *.h, at any depth) belongs to the room with the longest matching path prefix: with both
`queue` and `queue/engine` declared, src/queue/engine/x.cpp is in queue/engine and src/queue/y.cpp in queue.

The rule: a source file may include (`#include "..."`) a file of its own room or of a room on a lower floor.
An include of a room on a higher floor (upward) or of another room on the same floor (sideways) is a
violation. So are a source file in no declared room, a room declared twice or not there, and an include of
ours that names no file.

Which quoted includes are ours. The build names our headers relative to SRC (the Makefile's -I$(srcdir)/src:
`#include "base/pg.hpp"`), while PostgreSQL's headers are quoted includes too (`#include "utils/guc.h"`,
`"postgres.h"`, most inside `extern "C" {}`). So a quoted include is ours when it names a file that exists,
looked up as the compiler does: beside the including file first, then under SRC; its path must stay inside
SRC. A quoted include that names no file is PostgreSQL's (or the system's) and ignored, unless it is plainly
ours: it ends in `.hpp` (PostgreSQL's headers are `.h`), or, outside an `extern "C"` block, its first folder
is a folder of SRC (`queue/gone.hpp`, `base/missing.h`); then it is reported as an include of a missing
header. (A room must therefore not be named like a PostgreSQL include folder: access, catalog, utils, ...)
Angle-bracket includes (`<vector>`) are never ours. Includes are read line by line: one in a /* */ comment
or a disabled #if branch counts like any other.

Output: one line per violation, e.g.
    src/queue/store/x.cpp:12 includes queue/signal/frontier.hpp: queue/store (floor 6) may not include
    queue/signal (floor 5)
and exit 1; else one summary line and exit 0. Exit 2 when SRC or its floors block cannot be read.
Only the Python 3 standard library; nothing is written except temporary copies (--tap's self-tests).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

SECTION = "## The floors of the source tree"
SOURCE_SUFFIXES = (".cpp", ".hpp", ".c", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
EXTERN_C = re.compile(r'^\s*extern\s+"C"\s*\{')
FENCE = re.compile(r"^ {0,3}(```+|~~~+)\s*([^\s`]*)(.*)$")


class Unreadable(Exception):
    """SRC or its floors block cannot be read: no check is possible."""


def read_floors(src):
    """The floors block of SRC/README.md: a list of (line number, rooms) floors, top first."""
    readme = os.path.join(src, "README.md")
    try:
        with open(readme, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise Unreadable(f"{readme}: {e.strerror}")
    in_section = False
    fence = None  # the open fence ("```", "~~~~", ...) while inside a fenced block
    floors = None  # the floors, once the block is found
    in_floors = False
    start = 0
    for number, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if fence is None:
            if line.startswith("#"):
                in_section = line.rstrip() == SECTION or (in_section and not re.match(r"^#{1,2} ", line))
            elif m:
                fence = m.group(1)
                in_floors = in_section and m.group(2) == "floors"
                if in_floors:
                    if floors is not None:
                        raise Unreadable(f"{readme}:{number}: a second floors block")
                    floors, start = [], number
        elif (m and not m.group(2) and not m.group(3).strip() and m.group(1)[0] == fence[0]
              and len(m.group(1)) >= len(fence)):
            if in_floors and not floors:
                raise Unreadable(f"{readme}:{start}: the floors block declares no floor")
            fence, in_floors = None, False
        elif in_floors and line.split():
            floors.append((number, line.split()))
    if in_floors:
        raise Unreadable(f"{readme}:{start}: the floors block is not closed")
    if floors is None:
        raise Unreadable(f'{readme}: no ```floors block in the section "{SECTION}"')
    return floors


def source_files(src):
    """Every source file under SRC, as paths relative to it ('/'-separated), sorted."""
    found = []
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if name.endswith(SOURCE_SUFFIXES):
                found.append(os.path.relpath(os.path.join(root, name), src).replace(os.sep, "/"))
    return sorted(found)


def room_of(path, rooms):
    """The room PATH belongs to: the longest declared room that is PATH or a folder above it; None if none."""
    best = None
    for room in rooms:
        if path == room or path.startswith(room + "/"):
            if best is None or len(room) > len(best):
                best = room
    return best


def resolve(src, including, name):
    """Where the quoted include NAME of the file INCLUDING (relative to SRC) leads: a path relative to SRC,
    or None when it names no file inside SRC (looked up beside INCLUDING first, then under SRC)."""
    real_src = os.path.realpath(src)
    for base in (os.path.dirname(including), ""):
        candidate = os.path.normpath(os.path.join(src, base, name))
        if os.path.isfile(candidate):
            rel = os.path.relpath(os.path.realpath(candidate), real_src)
            if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
                return None
            return rel.replace(os.sep, "/")
    return None


def plainly_ours(src, name, in_extern_c):
    """Whether a quoted include that names no file is nonetheless ours (see the header comment)."""
    if name.endswith(".hpp"):
        return True
    first = name.split("/", 1)[0]
    return not in_extern_c and "/" in name and os.path.isdir(os.path.join(src, first))


def includes(src, path):
    """The quoted includes of SRC/PATH: (line number, name, inside an extern "C" block)."""
    found = []
    depth = 0  # brace depth inside extern "C" blocks; 0 outside
    with open(os.path.join(src, path), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            code = line.split("//", 1)[0]
            if depth == 0 and EXTERN_C.match(code):
                depth = code.count("{") - code.count("}")
                continue
            m = INCLUDE.match(line)
            if m:
                found.append((number, m.group(1), depth > 0))
            elif depth > 0:
                depth = max(0, depth + code.count("{") - code.count("}"))
    return found


def check(src):
    """(violations, summary) for the tree SRC; raises Unreadable when there is nothing to check against."""
    if not os.path.isdir(src):
        raise Unreadable(f"{src}: no such folder")
    shown = src.rstrip("/")
    floors = read_floors(src)
    violations = []
    floor_of = {}
    for floor, (line, rooms) in enumerate(floors, 1):
        for room in rooms:
            norm = room.strip("/")
            if norm != room.rstrip("/") or os.path.normpath(norm) != norm or norm.startswith(".."):
                violations.append(f"{shown}/README.md:{line}: room {room} is not a path inside {shown}")
                continue
            if norm in floor_of:
                violations.append(f"{shown}/README.md:{line}: room {norm} is declared twice "
                                  f"(floor {floor_of[norm]} and floor {floor})")
                continue
            floor_of[norm] = floor
            if not os.path.exists(os.path.join(src, norm)):
                violations.append(f"{shown}/README.md:{line}: room {norm} (floor {floor}) is declared but "
                                  f"{shown}/{norm} is not there")
    files = source_files(src)
    checked = ignored = 0
    for path in files:
        room = room_of(path, floor_of)
        if room is None:
            violations.append(f"{shown}/{path}: in no room: no room of the floors block "
                              f"({shown}/README.md) holds it")
        for number, name, in_extern_c in includes(src, path):
            target = resolve(src, path, name)
            where = f"{shown}/{path}:{number} includes {name}"
            if target is None:
                if plainly_ours(src, name, in_extern_c):
                    violations.append(f"{where}: no such file in {shown}")
                else:
                    ignored += 1
                continue
            checked += 1
            if room is None:
                continue
            other = room_of(target, floor_of)
            if other is None:
                if not target.endswith(SOURCE_SUFFIXES):
                    violations.append(f"{where}: {target} is in no room")
                continue  # a source file in no room is reported on its own
            mine, theirs = floor_of[room], floor_of[other]
            if other == room or theirs > mine:
                continue
            if theirs == mine:
                violations.append(f"{where}: {room} (floor {mine}) may not include {other} (floor {theirs}): "
                                  f"rooms on the same floor do not include each other")
            else:
                violations.append(f"{where}: {room} (floor {mine}) may not include {other} (floor {theirs})")
    summary = (f"{len(floor_of)} rooms on {len(floors)} floors, {len(files)} source files, {checked} includes "
               f"of {shown} checked ({ignored} of PostgreSQL's ignored): every include points down")
    return violations, summary


# ---- self-tests (--tap): the check fails where it must, on planted copies of SRC ----

def run_cli(src):
    """Runs this script on SRC as make layers does: (exit status, output lines)."""
    p = subprocess.run([sys.executable, os.path.abspath(__file__), src], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return p.returncode, p.stdout.splitlines()


def append_line(path, text):
    """Appends the line TEXT to PATH; returns its line number."""
    with open(path, encoding="utf-8", errors="replace") as f:
        content = f.read()
    if content and not content.endswith("\n"):
        content += "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(content + text + "\n")
    return content.count("\n") + 1


def self_tests(src):
    """The self-tests: (description, function(copy) -> (expected substring or None for a pass, or a SKIP reason))."""
    declared = read_floors(src)
    floors = [rooms for _, rooms in declared]
    floor_of = {room.strip("/"): n for n, rooms in enumerate(floors, 1) for room in rooms}
    files = source_files(src)
    by_room = {}
    for path in files:
        by_room.setdefault(room_of(path, floor_of), []).append(path)

    def first(room, prefer):
        """A source file of ROOM, one ending in PREFER if there is one."""
        paths = by_room.get(room, [])
        return next((p for p in paths if p.endswith(prefer)), paths[0] if paths else None)

    def plant(room):
        """A source file of ROOM to plant a line in (a .cpp if there is one)."""
        return first(room, ".cpp")

    def upward(copy):
        for high in range(len(floors)):
            for low in range(len(floors) - 1, high, -1):
                for h in floors[high]:
                    for l in floors[low]:
                        target, into = first(h.strip("/"), ".hpp"), plant(l.strip("/"))
                        if target and into:
                            n = append_line(os.path.join(copy, into), f'#include "{target}"')
                            return (f"{into}:{n} includes {target}: {l.strip('/')} (floor {low + 1}) may not "
                                    f"include {h.strip('/')} (floor {high + 1})")
        return "SKIP no two floors with source files"

    def sideways(copy):
        for n_floor, rooms in enumerate(floors, 1):
            for a in rooms:
                for b in rooms:
                    target, into = first(b.strip("/"), ".hpp"), plant(a.strip("/"))
                    if a != b and target and into:
                        n = append_line(os.path.join(copy, into), f'#include "{target}"')
                        return (f"{into}:{n} includes {target}: {a.strip('/')} (floor {n_floor}) may not include "
                                f"{b.strip('/')} (floor {n_floor}): rooms on the same floor")
        return "SKIP no floor with two rooms that hold source files"

    def missing(copy):
        into = next((plant(r) for r in floor_of if plant(r)), None)
        if into is None:
            return "SKIP no source file"
        folder = next((r for r in floor_of if os.path.isdir(os.path.join(src, r))), "base")
        name = f"{folder}/layers_no_such_header.hpp"
        n = append_line(os.path.join(copy, into), f'#include "{name}"')
        return f"{into}:{n} includes {name}: no such file"

    def outside(copy):
        name = "layers_stray"
        while room_of(name + "/stray.cpp", floor_of) is not None or os.path.exists(os.path.join(src, name)):
            name += "_"
        os.mkdir(os.path.join(copy, name))
        with open(os.path.join(copy, name, "stray.cpp"), "w") as f:
            f.write("// a source file in no room of the floors\n")
        return f"{name}/stray.cpp: in no room"

    def absent(copy):
        readme = os.path.join(copy, "README.md")
        with open(readme, encoding="utf-8") as f:
            lines = f.read().split("\n")
        room = "layers_absent_room"
        lines[declared[-1][0] - 1] += " " + room  # on the bottom floor's line
        with open(readme, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        return f"room {room} (floor {len(floors)}) is declared but"

    def postgres_include(copy):
        into = next((plant(r) for r in floor_of if plant(r)), None)
        if into is None:
            return "SKIP no source file"
        append_line(os.path.join(copy, into), '#include "utils/layers_postgres_header.h"')
        return None

    def downward(copy):
        if len(floors) < 2:
            return "SKIP fewer than two floors"
        for h in floors[0]:
            for l in floors[-1]:
                target, into = first(l.strip("/"), ".hpp"), plant(h.strip("/"))
                if target and into:
                    append_line(os.path.join(copy, into), f'#include "{target}"')
                    return None
        return "SKIP no source files on the top and bottom floors"

    return [
        ("an include of a room on a higher floor (upward) is reported", upward),
        ("an include of another room on the same floor (sideways) is reported", sideways),
        ("an include of a header of ours that is not there is reported", missing),
        ("a source file in no room is reported", outside),
        ("a room declared in the floors block but not in the tree is reported", absent),
        ("a quoted include that is no file of ours (PostgreSQL's) is ignored", postgres_include),
        ("an include from the top floor of the bottom floor passes", downward),
    ]


def tap(src):
    """TAP lines: the tree SRC itself, then each self-test on a copy of it. Returns the number of failures."""
    n = failed = 0

    def line(ok, description, notes=()):
        nonlocal n, failed
        n += 1
        failed += not ok
        print(f"{'ok' if ok else 'not ok'} {n} - {description}")
        for note in notes:
            print(f"#   {note}")

    try:
        violations, summary = check(src)
    except Unreadable as e:
        line(False, f"the floors of {src}", [str(e)])
        return failed
    outcome = summary if not violations else f"{len(violations)} violation{'s' if len(violations) != 1 else ''}"
    line(not violations, f"the floors of {src}: {outcome}", violations)
    if violations:
        return failed  # the self-tests need a tree that passes
    with tempfile.TemporaryDirectory(prefix="ck_layers.") as tmp:
        for i, (description, plant) in enumerate(self_tests(src)):
            copy = os.path.join(tmp, f"src{i}")
            shutil.copytree(src, copy, symlinks=True)
            expected = plant(copy)
            if expected and expected.startswith("SKIP "):
                n += 1
                print(f"ok {n} - {description} # SKIP {expected[5:]}")
                continue
            status, out = run_cli(copy)
            if expected is None:
                line(status == 0, description, [] if status == 0 else [f"exit {status}"] + out)
            else:
                hits = [o for o in out if expected in o]
                errors = [o for o in out if o.startswith(copy)]
                ok = status == 1 and len(hits) == 1 and len(errors) == 1
                line(ok, description, [] if ok else [f"exit {status}, expected one line with: {expected}"] + out)
    return failed


def main(argv):
    args = argv[1:]
    as_tap = "--tap" in args
    args = [a for a in args if a != "--tap"]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "src")
    src = os.path.normpath(src)
    if as_tap:
        return 1 if tap(src) else 0
    try:
        violations, summary = check(src)
    except Unreadable as e:
        print(f"layers: {e}", file=sys.stderr)
        return 2
    for v in violations:
        print(v)
    if violations:
        print(f"layers: {len(violations)} violation{'s' if len(violations) != 1 else ''} of the floors declared in "
              f"{src}/README.md", file=sys.stderr)
        return 1
    print(f"layers: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
