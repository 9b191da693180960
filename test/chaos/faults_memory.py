"""Memory over long runs (test/chaos/faults.py, part "memory").

For each function family one backend makes a million calls (full mode; 100,000 in short mode;
find_overlaps, heavier, 10,000 and 2,000; claim_wait on an empty queue, which waits up to a
millisecond, 20,000 and 4,000), committing every 100 or 1,000 calls, with each
answer checked (faults_memory.sql). Its memory contexts (sum of pg_backend_memory_contexts
total_bytes, less the procedure's own SPI context, which PostgreSQL grows with every COMMIT
after DML whoever runs it: the baseline, a plain UPDATE in the same loop, shows it) and VmData
are sampled at the end of the warm-up (a tenth of the calls) and at the end: the growth in
between must stay below 1 MB. Two families run at a time (two cores).
"""
import os
import threading
import time

import psycopg

from faults_lib import connect, recreate_db, drop_db

DB = "ck_chaos_memory"
BOUND_BYTES = 1 << 20          # memory contexts may grow less than this after the warm-up
VMDATA_BOUND_KB = 1024         # and VmData (malloc outside the contexts: a C++ leak shows here) less than this
PARALLEL = 2

# (family, procedure, calls full, calls short, calls per transaction)
FAMILIES = [
    ("queue", "mem_queue", 1_000_000, 100_000, 100),
    ("complete_and_claim", "mem_complete_and_claim", 1_000_000, 100_000, 100),
    ("claim_wait", "mem_claim_wait", 20_000, 4_000, 100),
    ("try_decrement", "mem_try_decrement", 1_000_000, 100_000, 1000),
    ("transition", "mem_transition", 1_000_000, 100_000, 1000),
    ("xact_lock by name", "mem_xact_lock_name", 1_000_000, 100_000, 1000),
    ("xact_lock by number", "mem_xact_lock_number", 1_000_000, 100_000, 1000),
    ("sqlstate_action", "mem_sqlstate_action", 1_000_000, 100_000, 1000),
    ("find_overlaps", "mem_find_overlaps", 10_000, 2_000, 100),
    ("race_detector", "mem_race_detector", 1_000_000, 100_000, 1000),
    ("baseline", "mem_baseline", 1_000_000, 100_000, 100),   # plain UPDATE: reported, not checked
]


def kb(n):
    return f"{n / 1024:,.0f} kB"


def run(tap, server, mode):
    full = mode == "full"
    recreate_db(DB)
    with connect(DB, application_name="chaos-memory") as c:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "faults_memory.sql")) as f:
            c.execute(f.read())
    results = {}
    lock = threading.Lock()
    todo = list(FAMILIES)

    def work():
        while True:
            with lock:
                if not todo:
                    return
                family, proc, n_full, n_short, per = todo.pop(0)
            calls = n_full if full else n_short
            warm = calls // 10
            started = time.monotonic()
            try:
                with connect(DB, application_name=f"chaos-memory-{family}") as c:
                    c.execute("SET synchronous_commit = off")   # memory, not durability, is measured here
                    c.execute(f"CALL {proc}(%s, %s, %s)", (calls, warm, per))
                error = None
            except psycopg.Error as e:
                error = f"{e.sqlstate}: {str(e).strip()}"
            with lock:
                results[family] = (calls, warm, per, time.monotonic() - started, error)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(PARALLEL)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    with connect(DB, application_name="chaos-memory") as c:
        total_checked = 0
        for family, *_ in FAMILIES:
            calls, warm, per, took, error = results[family]
            samples = {r[0]: r[1:] for r in c.execute(
                "SELECT calls, context_bytes, proc_bytes, vmdata_kb FROM mem_samples WHERE family = %s",
                (family,)).fetchall()}
            checked = c.execute("SELECT checked FROM mem_checked WHERE family = %s", (family,)).fetchone()
            if family != "baseline":
                total_checked += checked[0] if checked else 0
            if error or warm not in samples or calls not in samples or per not in samples:
                tap.ok(False, f"memory: {calls:,} calls of {family} in one backend", error or "samples missing")
                continue
            first, at_warm, at_end = samples[per], samples[warm], samples[calls]
            growth = at_end[0] - at_warm[0]
            vm_growth = None if at_end[2] is None or at_warm[2] is None else at_end[2] - at_warm[2]
            vm = "" if vm_growth is None else f"; VmData {at_warm[2]:,} -> {at_end[2]:,} kB"
            figure = (f"{calls:,} calls in {took:.0f}s, {calls // per:,} commits; contexts {kb(first[0])} first, "
                      f"{kb(at_warm[0])} warm, {kb(at_end[0])} end ({growth:+,} B); procedure's SPI Proc "
                      f"{kb(at_warm[1])} -> {kb(at_end[1])}{vm}")
            if family == "baseline":
                tap.figure("memory: baseline, plain UPDATE", figure)
                continue
            ok = growth < BOUND_BYTES and (vm_growth is None or vm_growth < VMDATA_BOUND_KB)
            tap.ok(ok, f"memory: {calls:,} calls of {family} in one backend ({took:.0f}s, every answer checked): "
                       f"contexts {kb(at_warm[0])} after {warm:,} calls -> {kb(at_end[0])} at the end "
                       f"({growth:+,} bytes, bound {BOUND_BYTES:,})"
                       + ("" if vm_growth is None else
                          f"; VmData {vm_growth:+,} kB (bound {VMDATA_BOUND_KB:,} kB)"))
            tap.figure(f"memory: {family}", figure)
        tap.figure("memory: answers checked", f"{total_checked:,}")
        tap.calls += total_checked
    if tap.failed == 0 and not os.environ.get("CK_FAULTS_KEEP"):
        drop_db(DB)
