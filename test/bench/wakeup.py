#!/usr/bin/python3
"""How fast a waiting worker learns of a new job, and what idle waiters cost (make bench).

latency WAY: 8 workers wait for jobs of queue wake_bench while a producer enqueues 1,000 jobs, one
per transaction, at random intervals of 1 to 10 ms. Each job's latency runs from the moment the
producer's COMMIT returned to the moment a worker got the job back (one machine, one clock; a
worker woken before the producer saw its COMMIT return counts 0). WAY is claim_wait (ck.claim_wait,
woken on commit, preloaded or not from 0.4.0, polling only where ck.claim_wait_mode() says poll) or listen (a client that LISTENs
on the queue's NOTIFY channel and then calls ck.claim, the way LISTEN/NOTIFY queues work).
Prints "p50_ms p99_ms max_ms".

await [JOBS [CALLERS]]: 8 callers each wait in ck.await_job for a job of their own (claimed, queue with a
history) while a worker finishes one awaited job per transaction, every 1 to 10 ms, with a result;
each job is finished only once its caller sleeps in the wait (pg_stat_activity shows its wait
event), so every wait is woken, never answered by its first look. Each latency runs from the
moment the worker's COMMIT returned to the moment the caller got the outcome back (0 when woken
before the worker saw its COMMIT return). Prints "p50_ms p90_ms p99_ms max_ms finish_ms cpu_ms": finish_ms is
the median time the finishing statement took, its COMMIT included (what a wait timed from before
the COMMIT adds: the commit's WAL flush), then "cpu_ms", the CPU milliseconds the callers' backends
used per await (their looks, the needless ones included: utime + stime from /proc, run as root or
as the server's user). CALLERS (8) sets how many wait at once.

idle N SECONDS: N backends wait in ck.claim_wait on an empty queue for SECONDS; prints the CPU
seconds those backends used (utime + stime from /proc/PID/stat; run as root or as the server's
user).

Connection parameters come from the PG* environment variables. Bounded in count and time.
"""
import os
import queue
import random
import selectors
import sys
import threading
import time

import psycopg

QUEUE = "wake_bench"
CHANNEL = "public." + QUEUE


def connect():
    return psycopg.connect("", autocommit=True)


def setup():
    with connect() as c:
        c.execute(f"SELECT ck.drop_queue(to_regclass('{QUEUE}')) WHERE to_regclass('{QUEUE}') IS NOT NULL")
        c.execute(f"SELECT ck.create_queue('{QUEUE}', notify => true)")


def claim_wait_worker(got, stop):
    with connect() as c:
        while not stop.is_set():
            rows = c.execute(f"SELECT id, lease_token, (payload->>'n')::int FROM ck.claim_wait('{QUEUE}', 1, NULL, '1 second')").fetchall()
            now = time.time()
            for job, token, n in rows:
                got[n] = now
                c.execute("SELECT ck.complete(%s, %s, %s)", (QUEUE, job, token))


def listen_worker(got, stop, ready):
    with connect() as c:
        c.execute(f'LISTEN "{CHANNEL}"')
        ready.release()
        sel = selectors.DefaultSelector()
        sel.register(c.fileno(), selectors.EVENT_READ)
        while not stop.is_set():
            if sel.select(timeout=1.0):
                c.pgconn.consume_input()
                while c.pgconn.notifies() is not None:
                    pass
            # a notification, or a timeout: take whatever is ready
            while True:
                rows = c.execute(f"SELECT id, lease_token, (payload->>'n')::int FROM ck.claim('{QUEUE}')").fetchall()
                if not rows:
                    break
                now = time.time()
                for job, token, n in rows:
                    got[n] = now
                    c.execute("SELECT ck.complete(%s, %s, %s)", (QUEUE, job, token))


def latency(way, jobs=1000, workers=8):
    setup()
    got, stop, ready = {}, threading.Event(), threading.Semaphore(0)
    if way == "listen":
        threads = [threading.Thread(target=listen_worker, args=(got, stop, ready)) for _ in range(workers)]
    else:
        threads = [threading.Thread(target=claim_wait_worker, args=(got, stop)) for _ in range(workers)]
    for t in threads:
        t.start()
    if way == "listen":
        for _ in range(workers):
            ready.acquire(timeout=10)
    time.sleep(0.5)
    committed = {}
    rng = random.Random(42)
    with connect() as c:
        for n in range(jobs):
            time.sleep(rng.uniform(0.001, 0.010))
            c.execute("SELECT ck.enqueue(%s, jsonb_build_object('n', %s::int))", (QUEUE, n))
            committed[n] = time.time()
    deadline = time.time() + 30
    while len(got) < jobs and time.time() < deadline:
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join(timeout=10)
    if len(got) < jobs:
        sys.exit(f"only {len(got)} of {jobs} jobs were claimed")
    ms = sorted(max(0.0, got[n] - committed[n]) * 1000 for n in range(jobs))
    print(f"{ms[len(ms) // 2]:.2f} {ms[int(len(ms) * 0.99)]:.2f} {ms[-1]:.2f}")


def await_latency(jobs=400, callers=8):
    setup()
    with connect() as c:
        c.execute(f"SELECT ck.set_history('{QUEUE}', '1 day')")
    ids = [queue.Queue() for _ in range(callers)]
    pids, got, wrong, stop = [None] * callers, {}, [], threading.Event()

    def caller(k):
        with connect() as c:
            c.execute(f"SELECT ck.await_job('{QUEUE}', 0, '0')")   # warm: plans prepared, library loaded
            pids[k] = c.execute("SELECT pg_backend_pid()").fetchone()[0]
            while not stop.is_set():
                try:
                    job = ids[k].get(timeout=0.1)
                except queue.Empty:
                    continue
                state, result = c.execute(f"SELECT state, result FROM ck.await_job('{QUEUE}', %s, '10 seconds')", (job,)).fetchone()
                got[job] = time.time()
                if state != "completed" or result != {"n": job}:
                    wrong.append(job)

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(callers)]
    for t in threads:
        t.start()
    committed, took, rng = {}, [], random.Random(42)
    with connect() as c:
        while None in pids:
            time.sleep(0.01)
        ticks = sum(cpu_ticks(p) for p in pids)
        def give(k):   # a job of its own, claimed, for caller k to await
            c.execute(f"SELECT ck.enqueue('{QUEUE}', '{{}}')")
            given[k] = c.execute(f"SELECT id, lease_token FROM ck.claim('{QUEUE}')").fetchone()
            ids[k].put(given[k][0])

        given = {}
        for k in range(callers):
            give(k)
        for n in range(jobs):
            k = n % callers
            job, token = given[k]
            deadline = time.time() + 10
            while time.time() < deadline:   # until it sleeps in the wait, having found the job running
                row = c.execute("SELECT wait_event FROM pg_catalog.pg_stat_activity WHERE pid = %s AND state = 'active'"
                                " AND query LIKE '%%ck.await_job%%'", (pids[k],)).fetchone()
                if row and row[0] in ("CkClaimWait", "Extension"):
                    break
                time.sleep(0.0005)
            time.sleep(rng.uniform(0.001, 0.010))
            began = time.time()
            c.execute(f"SELECT ck.complete('{QUEUE}', %s, %s, jsonb_build_object('n', %s::bigint))", (job, token, job))
            committed[job] = time.time()
            took.append((committed[job] - began) * 1000)
            if n + callers < jobs:
                give(k)
    deadline = time.time() + 30
    while len(got) < len(committed) and time.time() < deadline:
        time.sleep(0.05)
    ticks = sum(cpu_ticks(p) for p in pids) - ticks
    stop.set()
    for t in threads:
        t.join(timeout=15)
    if len(got) < len(committed) or wrong:
        sys.exit(f"{len(got)} of {len(committed)} awaits returned, {len(wrong)} with a wrong outcome")
    ms = sorted(max(0.0, got[j] - committed[j]) * 1000 for j in committed)
    took.sort()
    print(f"{ms[len(ms) // 2]:.2f} {ms[int(len(ms) * 0.9)]:.2f} {ms[int(len(ms) * 0.99)]:.2f} {ms[-1]:.2f} {took[len(took) // 2]:.2f} "
          f"{ticks / os.sysconf('SC_CLK_TCK') * 1000 / len(committed):.2f}")


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])   # utime, stime


def idle(n, seconds):
    setup()
    conns = [connect() for _ in range(n)]
    pids = [c.execute("SELECT pg_backend_pid()").fetchone()[0] for c in conns]
    for c in conns:   # warm up: plans prepared, library loaded
        c.execute(f"SELECT count(*) FROM ck.claim_wait('{QUEUE}', 1, NULL, '0')")
    before = sum(cpu_ticks(p) for p in pids)

    def wait(c):
        c.execute(f"SELECT count(*) FROM ck.claim_wait('{QUEUE}', 1, NULL, %s::interval)", (f"{seconds} seconds",))

    threads = [threading.Thread(target=wait, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 30)
    after = sum(cpu_ticks(p) for p in pids)
    for c in conns:
        c.close()
    print(f"{(after - before) / os.sysconf('SC_CLK_TCK'):.2f}")


if __name__ == "__main__":
    if sys.argv[1] == "latency":
        latency(sys.argv[2])
    elif sys.argv[1] == "await":
        await_latency(*(int(a) for a in sys.argv[2:4]))
    elif sys.argv[1] == "idle":
        idle(int(sys.argv[2]), float(sys.argv[3]))
    else:
        sys.exit(__doc__)
