"""test/chaos/faults.sh's body: crash recovery under load, backend faults, memory over long runs.

    python3 faults.py full|short [PART...]      PART: crash, backend, memory (default: all three)

Prints numbered TAP and a report (lines starting with '#'). Needs psycopg 3 and a throwaway
cluster from test/cluster.sh (PGHOST, PGPORT, PGUSER; CK_SERVER_LOG), which it stops, kills
and starts again, and leaves running.
"""
import sys
import time
import traceback

sys.dont_write_bytecode = True   # no __pycache__ in the work tree
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))

from faults_lib import Server, Tap   # noqa: E402

PARTS = ("crash", "backend", "memory")


def main(argv):
    if len(argv) < 2 or argv[1] not in ("full", "short") or any(p not in PARTS for p in argv[2:]):
        print(f"usage: {argv[0]} full|short [{'|'.join(PARTS)}...]", file=sys.stderr)
        return 2
    mode = argv[1]
    parts = argv[2:] or list(PARTS)
    tap = Tap()
    server = Server()
    tap.comment(f"faults ({mode}) on PostgreSQL {server.version}, data directory {server.data}")
    started = time.monotonic()
    for name in parts:
        part_started = time.monotonic()
        tap.comment(f"== {name}")
        try:
            module = __import__(f"faults_{name}")
            module.run(tap, server, mode)
        except Exception:   # a part that breaks down is one failure; the others still run
            tap.ok(False, f"part {name} ran to its end", traceback.format_exc())
            server.ensure_running()
        tap.figure(f"{name}: part run time", f"{time.monotonic() - part_started:.1f}s")
    if not server.ensure_running():
        tap.ok(False, "the server is running at the end")
    tap.figure("calls checked, all parts", f"{tap.calls:,}")
    tap.comment("")
    tap.comment(f"report ({mode}, {time.monotonic() - started:.0f}s, {tap.n} checks, {tap.failed} failed):")
    width = max((len(label) for label, _ in tap.figures), default=0)
    for label, value in tap.figures:
        tap.comment(f"  {label.ljust(width)}  {value}")
    tap.plan()
    return 0 if tap.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
