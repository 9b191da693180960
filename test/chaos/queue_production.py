"""test/chaos/queue_production.sh's body: issue 47's queue in production under faults.

    python3 queue_production.py full|short

One queue with a history, a job timeout, rate limits on three concurrency keys, a concurrency limit
on one (and two keys and the jobs without a key unlimited). Worker threads claim (recording each claim in `starts` in the
claim's own transaction: a row there is a committed claim, a start), heartbeat, sometimes stall
past the timeout, sometimes fail, and complete with a result, recording the effect in `effects`
in the completion's transaction (exactly once). Meanwhile a pauser pauses and resumes the queue,
a key pauser one concurrency key at a time (the limited key, an unlimited one, a rate-limited one),
a producer enqueues, a canceller cancels, and the chaos thread terminates worker backends
(pg_terminate_backend) and crashes the server (SIGKILL of a worker backend: crash restart), each
crash while a key is paused (the key pauser held until the server is back and the pause checked).
Then the queue and its keys are resumed and drained with bounded waits, and checked:

  - every enqueued job is in exactly one place: completed (one effect, one history record
    'completed' with that effect's result) or dead (one dead letter, one history record 'buried'
    or 'cancelled'); none lost, none twice, no history record of no job, ck.job agrees;
  - no rate-limited key started more than N jobs in any window of its period (the starts that
    committed, each between two readings of clock_timestamp(), the clock the limit uses: one
    before the claim, one in its statement after it);
  - no claim committed while the queue was paused: none timed between the pause's commit (a
    clock_timestamp() read after it) and the resume (one read before it), across crash restarts;
  - no claim of a paused key committed while it was paused (timed the same way), its pause kept by
    every crash restart (its row of ck.paused_keys there after it, a claim then takes none of its
    jobs), and after the last resume every job of the paused keys completed or dead, none left parked;
  - no completion was accepted after its attempt's deadline (the effect's clock_timestamp()
    before ck.try_complete against the job's timeout_at read in the same transaction), and the
    stalled attempts were refused and failed with 'timeout';
  - no PANIC, assertion or signal in the server log but the SIGKILLs sent.

All times are the server's clock_timestamp(): one clock, no skew between sessions. Prints TAP.
"""
import os
import random
import re
import signal
import sys
import threading
import time
import traceback

sys.dont_write_bytecode = True   # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import psycopg   # noqa: E402

from faults_lib import Server, Tap, connect, drop_db, one, recreate_db, wait_for   # noqa: E402

DB = "ck_chaos_queue_production"
SIZES = {
    #        jobs up front, load s, crashes, terminations, workers
    "short": dict(jobs=120, load_s=14, crashes=1, kills=3, workers=4),
    "full": dict(jobs=600, load_s=100, crashes=3, kills=12, workers=6),
}
RATED = {"k0": 5, "k1": 8, "k2": 4}   # key: max_jobs per PERIOD_S
PERIOD_S = 1.0
LIMITED = {"c0": 2}                  # key: concurrency limit
KEYS = list(RATED) + list(LIMITED) + ["u0", "u1", None]
PAUSED_KEYS = ["c0", "u0", "k1"]     # paused in turn: limited, unlimited, rate-limited
TIMEOUT_S = 1.0                      # ck.queues.timeout
LEASE = "3 seconds"                  # capped by the claim at the attempt's deadline
MAX_ATTEMPTS = 3
DRAIN_BOUND_S = 60


def lost(exc):
    """True when exc means the connection is gone (terminated, crash restart)."""
    return isinstance(exc, (psycopg.OperationalError, psycopg.errors.AdminShutdown,
                            psycopg.errors.CrashShutdown, psycopg.errors.CannotConnectNow))


def reconnect(name, timeout=90):
    """A new connection once the server takes one (after a crash restart)."""
    return wait_for(lambda: connect(DB, name), timeout, 0.1)


class Run:
    def __init__(self, size):
        self.size = size
        self.stop_chaos = threading.Event()
        self.draining = threading.Event()
        self.stop_all = threading.Event()
        self.errors = []
        self.counts = dict(claims=0, completed=0, refused=0, failed=0, stalled=0, stalled_accepted=0,
                           lost=0, slow_commits=0, cancels=0, enqueued=0)
        self.intervals = []        # (after the pause's commit, before the resume), server clock
        self.pause_errors = 0
        self.key_intervals = []    # (key, after the key's pause's commit, before its resume), server clock
        self.key_paused = None     # the key paused now (its pause committed), else None
        self.hold_key = threading.Event()   # set: the key pauser keeps its key paused (a crash is coming)
        self.key_lock = threading.Lock()    # hold_key is set, and key_paused cleared before a resume, under it
        self.crash_checks = []     # per crash: (key, row kept, key's jobs waiting, claimed after the restart, others)
        self.kills = 0
        self.crashes = 0
        self.lock = threading.Lock()

    def add(self, name, n=1):
        with self.lock:
            self.counts[name] += n

    def error(self, text):
        with self.lock:
            self.errors.append(text)


def setup(size):
    recreate_db(DB)
    with connect(DB) as c:
        c.execute(f"""
            CREATE EXTENSION concurrency_kit;
            SELECT ck.create_queue('work', lease => '{LEASE}', max_attempts => {MAX_ATTEMPTS});
            UPDATE ck.queues SET timeout = '{TIMEOUT_S} seconds' WHERE queue = 'work'::regclass;
            SELECT ck.set_history('work', '1 day');
            CREATE TABLE enqueued (job_id bigint PRIMARY KEY, key text);
            CREATE TABLE starts (job_id bigint NOT NULL, lease_token bigint NOT NULL, attempts int, key text,
                                 worker int, before timestamptz NOT NULL, at timestamptz NOT NULL, poison text);
            CREATE TABLE effects (job_id bigint NOT NULL, lease_token bigint NOT NULL, worker int, result jsonb,
                                  before_ack timestamptz NOT NULL, timeout_at timestamptz);
        """)
        for key, n in RATED.items():
            c.execute("SELECT ck.set_rate_limit('work', %s, %s, %s::interval)", (key, n, f"{PERIOD_S} seconds"))
        for key, n in LIMITED.items():
            c.execute("SELECT ck.set_concurrency_limit('work', %s, %s)", (key, n))
        # Two of them hang for sure: the check of job timeouts needs a last attempt that timed out (with random
        # poison alone, a CI run had none left uncancelled, on two majors at once).
        enqueue(c, size["jobs"], hang=2)


def enqueue(conn, n, hang=0):
    """n jobs of random keys; a few poisoned: 'fail' always fails, 'hang' always stalls past the timeout (the
    first `hang` of them for sure)."""
    keys = [random.choice(KEYS) for _ in range(n)]
    poison = [random.choice(["fail", "hang"]) if random.random() < 0.06 else None for _ in range(n)]
    poison[:hang] = ["hang"] * min(hang, n)
    with conn.transaction():
        conn.execute("INSERT INTO enqueued SELECT ck.enqueue('work', jsonb_build_object('key', k, 'poison', p), "
                     "concurrency_key => k), k FROM unnest(%s::text[], %s::text[]) AS j (k, p)", (keys, poison))
    return n


def worker(run, i):
    name = f"qp_worker_{i}"
    conn = None
    while not run.stop_all.is_set():
        try:
            if conn is None or conn.closed:
                conn = reconnect(name)
                if conn is None:
                    run.error(f"worker {i}: no connection within 90 s")
                    return
            work_once(run, i, conn)
        except Exception as e:   # noqa: BLE001 -- every error is reported
            if lost(e) or (conn is not None and conn.closed):
                run.add("lost")
                try:
                    conn.close()
                except Exception:   # noqa: BLE001
                    pass
                conn = None
                time.sleep(0.1)
            else:
                run.error(f"worker {i}: {type(e).__name__}: {e}".strip())
                try:
                    conn.close()
                except Exception:   # noqa: BLE001
                    pass
                conn = None
    if conn is not None:
        conn.close()


def work_once(run, i, conn):
    chaos = not run.draining.is_set()
    claim = "ck.claim_wait('work', 2, NULL, '200 ms')" if random.random() < 0.5 else "ck.claim('work', 2)"
    with conn.transaction():
        # The limit counts each start at a moment between these two readings of the clock.
        before = one(conn, "SELECT clock_timestamp()")
        jobs = conn.execute(f"INSERT INTO starts SELECT c.id, c.lease_token, c.attempts, c.payload->>'key', %s, "
                            f"%s, clock_timestamp(), c.payload->>'poison' FROM {claim} AS c "
                            f"RETURNING job_id, lease_token, poison", (i, before)).fetchall()
        if jobs and chaos and random.random() < 0.1:
            run.add("slow_commits")   # a claim in flight: a pause waits for it
            time.sleep(0.05)
    if not jobs:
        if claim.startswith("ck.claim("):
            time.sleep(0.05)
        return
    run.add("claims", len(jobs))
    for job, token, poison in jobs:
        r = random.random() if chaos else 1.0
        r = {"hang": 0.0, "fail": 0.1}.get(poison, r)
        stall = r < 0.08
        if stall:
            run.add("stalled")
            # Heartbeats cannot carry the attempt past its deadline.
            time.sleep(TIMEOUT_S * 0.6)
            conn.execute("SELECT ck.try_extend_lease('work', %s, %s, '10 seconds')", (job, token))
            time.sleep(TIMEOUT_S * 0.6)
        elif r < 0.18:
            if one(conn, "SELECT ck.try_fail('work', %s, %s, 'boom', '100 ms')", (job, token)) is not None:
                run.add("failed")
            continue
        elif r < 0.3:
            conn.execute("SELECT ck.try_extend_lease('work', %s, %s, '2 seconds')", (job, token))
        with conn.transaction():
            timeout_at = one(conn, "SELECT timeout_at FROM work WHERE id = %s", (job,))
            before = one(conn, "SELECT clock_timestamp()")
            result = f'{{"worker": {i}, "token": {token}}}'
            accepted = one(conn, "SELECT ck.try_complete('work', %s, %s, %s::jsonb)", (job, token, result))
            if accepted:
                conn.execute("INSERT INTO effects VALUES (%s, %s, %s, %s::jsonb, %s, %s)",
                             (job, token, i, result, before, timeout_at))
        run.add("completed" if accepted else "refused")
        if stall and accepted:
            run.add("stalled_accepted")


def pauser_failed(run, conn, e, who):
    """A pauser's step failed: an error counts unless the connection was lost (the crashes); the connection
    is closed either way and made again at the next step (returns None)."""
    if not lost(e) and not (conn is None or conn.closed):
        run.pause_errors += 1
        run.error(f"{who}: {type(e).__name__}: {e}")
    try:
        conn.close()
    except Exception:   # noqa: BLE001
        pass
    time.sleep(0.1)
    return None


def pauser(run):
    """Pauses and resumes the queue; the intervals in the server's clock."""
    conn, paused_since = None, None
    while True:
        try:
            if conn is None:
                conn = reconnect("qp_pauser")
                conn.execute("SET lock_timeout = '5s'")
                if paused_since is None and one(conn, "SELECT paused FROM ck.queue_stats('work')"):
                    conn.execute("SELECT ck.resume_queue('work')")   # a pause whose commit time we missed
            if paused_since is None:
                if run.stop_chaos.is_set():
                    break
                time.sleep(random.uniform(0.8, 1.6))
                conn.execute("SELECT ck.pause_queue('work')")
                paused_since = one(conn, "SELECT clock_timestamp()")
            else:
                time.sleep(random.uniform(0.4, 0.9))
                before = one(conn, "SELECT clock_timestamp()")
                conn.execute("SELECT ck.resume_queue('work')")
                run.intervals.append((paused_since, before))
                paused_since = None
        except Exception as e:   # noqa: BLE001
            conn = pauser_failed(run, conn, e, "pauser")
    if conn is not None:
        conn.close()


def key_pauser(run):
    """Pauses and resumes one concurrency key at a time, in turn; the intervals in the server's clock.
    While run.hold_key is set, a paused key stays paused (the chaos thread crashes the server meanwhile)."""
    conn, key, paused_since, turn = None, None, None, 0
    while True:
        try:
            if conn is None:
                conn = reconnect("qp_key_pauser")
                conn.execute("SET lock_timeout = '5s'")
                if paused_since is None:   # a pause whose commit time we missed
                    for (k,) in conn.execute("SELECT concurrency_key FROM ck.paused_keys "
                                             "WHERE queue = 'work'::regclass").fetchall():
                        conn.execute("SELECT ck.resume_queue('work', %s)", (k,))
            if paused_since is None:
                if run.stop_chaos.is_set():
                    break
                time.sleep(random.uniform(0.5, 1.0))
                key, turn = PAUSED_KEYS[turn % len(PAUSED_KEYS)], turn + 1
                conn.execute("SELECT ck.pause_queue('work', %s)", (key,))
                paused_since = one(conn, "SELECT clock_timestamp()")
                run.key_paused = key
            else:
                time.sleep(random.uniform(0.4, 0.9))
                # Once the chaos thread holds the pause, no resume starts; one that started first has
                # cleared key_paused, so the crash waits for the next key's pause.
                with run.key_lock:
                    if run.hold_key.is_set():
                        run.key_paused = key   # (again, after a resume that failed)
                        continue
                    run.key_paused = None
                before = one(conn, "SELECT clock_timestamp()")
                conn.execute("SELECT ck.resume_queue('work', %s)", (key,))
                run.key_intervals.append((key, paused_since, before))
                paused_since = None
        except Exception as e:   # noqa: BLE001
            conn = pauser_failed(run, conn, e, "key pauser")
    if conn is not None:
        conn.close()


def check_key_kept(key):
    """After a crash restart with key paused: whether its row of ck.paused_keys is there, and what a claim
    (rolled back) takes: (row kept, jobs of the key waiting, jobs of the key claimed, other jobs claimed)."""
    with reconnect("qp_crash_check") as c:
        kept = one(c, "SELECT count(*) FROM ck.paused_keys WHERE queue = 'work'::regclass "
                      "AND concurrency_key = %s", (key,)) == 1
        wait_for(lambda: one(c, "SELECT NOT paused FROM ck.queue_stats('work')"), 5, 0.05)
        waiting = one(c, "SELECT count(*) FROM work WHERE concurrency_key = %s AND lease_token IS NULL", (key,))
        with c.transaction(force_rollback=True):
            mine, others = c.execute("SELECT count(*) FILTER (WHERE payload->>'key' = %s), "
                                     "count(*) FILTER (WHERE payload->>'key' IS DISTINCT FROM %s) "
                                     "FROM ck.claim('work', 100)", (key, key)).fetchone()
    return kept, waiting, mine, others


def producer(run):
    conn = None
    while not run.stop_chaos.is_set():
        try:
            conn = conn or reconnect("qp_producer")
            run.add("enqueued", enqueue(conn, 1))
            if random.random() < 0.15:
                # Cancel a waiting or running job (the dead letters and history say 'cancelled'); not one that
                # hangs: those linger in the queue, the likeliest picks, and the timeouts' check needs them.
                job = one(conn, "SELECT id FROM work WHERE payload->>'poison' IS DISTINCT FROM 'hang' "
                                "ORDER BY random() LIMIT 1")
                if job is not None and one(conn, "SELECT ck.cancel('work', %s)", (job,)) != "gone":
                    run.add("cancels")
            time.sleep(0.1)
        except Exception as e:   # noqa: BLE001
            if not lost(e) and not (conn and conn.closed):
                run.error(f"producer: {type(e).__name__}: {e}")
            try:
                conn.close()
            except Exception:   # noqa: BLE001
                pass
            conn = None
            time.sleep(0.1)
    if conn:
        conn.close()


def worker_pids():
    with connect("postgres", "qp_chaos") as c:
        return [r[0] for r in c.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s "
                                        "AND application_name LIKE 'qp_worker_%%'", (DB,)).fetchall()]


def chaos(run, server):
    """Terminations and crashes spread over the load time."""
    size = run.size
    events = ["kill"] * size["kills"] + ["crash"] * size["crashes"]
    random.shuffle(events)
    gap = size["load_s"] / (len(events) + 1)
    for event in events:
        time.sleep(gap * random.uniform(0.6, 1.2))
        pids = wait_for(worker_pids, 30, 0.1)
        if not pids:
            run.error(f"chaos: no worker backend to {event}")
            continue
        pid = random.choice(pids)
        if event == "kill":
            # A backend that ended since it was listed is not terminated: another one is.
            def terminate(first=[pid]):
                with connect("postgres", "qp_chaos") as c:
                    target = first.pop() if first else random.choice(worker_pids() or [0])
                    return one(c, "SELECT pg_terminate_backend(%s)", (target,))
            if wait_for(terminate, 10, 0.1):
                run.kills += 1
        else:
            # Crash while a key is paused: its pause is held until the restart is checked.
            with run.key_lock:
                run.hold_key.set()
            key = wait_for(lambda: run.key_paused, 10, 0.05)
            pids = wait_for(worker_pids, 30, 0.1) or [pid]
            mark = server.log_size()
            os.kill(random.choice(pids), signal.SIGKILL)
            run.crashes += 1
            if not wait_for(lambda: "all server processes terminated; reinitializing" in server.log_since(mark), 30):
                run.error("chaos: no crash restart in the log within 30 s of the SIGKILL")
            if not server.wait_ready(90):
                run.error("chaos: the server did not come back within 90 s of the crash")
            try:
                run.crash_checks.append((key,) + (check_key_kept(key) if key else (False, None, None, None)))
            except Exception as e:   # noqa: BLE001
                run.error(f"chaos: the paused key's check after the crash: {type(e).__name__}: {e}")
            run.hold_key.clear()


def windows(starts, n, period):
    """starts: (before, at) of a key's committed starts, each counted by the limit at a moment between the two;
    a key's claims count one transaction at a time, so `at` orders them as those moments. For each n + 1
    consecutive starts, the last's `at` minus the first's `before` bounds the span of their moments from above:
    returns the smallest such bound (None with n starts or fewer) and how many were under period (n + 1 starts
    certainly within less than a period)."""
    starts = sorted(starts, key=lambda s: s[1])
    spans = [(starts[j + n][1] - starts[j][0]).total_seconds() for j in range(len(starts) - n)]
    return (min(spans) if spans else None), sum(1 for s in spans if s < period)


def check(tap, run, c):
    total = one(c, "SELECT count(*) FROM enqueued")
    left = one(c, "SELECT count(*) FROM work")
    tap.ok(left == 0, f"the queue drained: {total} jobs enqueued, {left} left in the queue")

    places = c.execute("""
        WITH e AS (SELECT job_id, count(*) AS n, min(result::text) AS result FROM effects GROUP BY job_id),
             d AS (SELECT id, count(*) AS n FROM work_dead GROUP BY id),
             h AS (SELECT id, count(*) AS n, min(state) AS state, min(result::text) AS result FROM work_history GROUP BY id)
        SELECT count(*) FILTER (WHERE coalesce(e.n, 0) = 1 AND d.n IS NULL AND h.n = 1 AND h.state = 'completed'
                                AND h.result = e.result) AS completed,
               count(*) FILTER (WHERE e.n IS NULL AND d.n = 1 AND h.n = 1 AND h.state IN ('buried', 'cancelled')) AS dead,
               count(*) FILTER (WHERE e.n IS NULL AND d.n IS NULL) AS lost,
               count(*) FILTER (WHERE e.n > 1 OR d.n > 1 OR (e.n IS NOT NULL AND d.n IS NOT NULL)) AS twice,
               count(*) FILTER (WHERE h.n IS NULL OR h.n > 1) AS history_not_once,
               count(*) FILTER (WHERE e.n = 1 AND h.n = 1 AND (h.state <> 'completed' OR h.result IS DISTINCT FROM e.result))
                   AS history_wrong
        FROM enqueued AS q LEFT JOIN e ON e.job_id = q.job_id LEFT JOIN d ON d.id = q.job_id
             LEFT JOIN h ON h.id = q.job_id
    """).fetchone()
    completed, dead, lost_jobs, twice, not_once, wrong = places
    stray = one(c, "SELECT count(*) FROM work_history AS h WHERE NOT EXISTS (SELECT FROM enqueued AS q WHERE q.job_id = h.id)")
    tap.ok(completed + dead == total and lost_jobs == 0 and twice == 0,
           f"every job is in exactly one place: {completed} completed (one effect), {dead} dead letters, "
           f"{lost_jobs} lost, {twice} twice, of {total}")
    states = dict(c.execute("SELECT state, count(*) FROM work_history GROUP BY 1").fetchall())
    tap.ok(not_once == 0 and wrong == 0 and stray == 0 and sum(states.values()) == total,
           f"history complete: every finished job there once ({states}), the completed with their effect's result "
           f"(not once: {not_once}, wrong state or result: {wrong}, records of no job: {stray})")
    disagree = one(c, """
        SELECT count(*) FROM enqueued AS q, ck.job('work', q.job_id) AS j
        WHERE j.state IS DISTINCT FROM (SELECT h.state FROM work_history AS h WHERE h.id = q.job_id LIMIT 1)""")
    tap.ok(disagree == 0, f"ck.job agrees with the history for every job ({disagree} disagree)")

    for key, n in RATED.items():
        times = c.execute("SELECT before, at FROM starts WHERE key = %s", (key,)).fetchall()
        shortest, over = windows(times, n, PERIOD_S)
        tap.ok(len(times) > 3 * n and over == 0,
               f"key {key} at {n} per {PERIOD_S:g} s: {len(times)} committed starts, never {n + 1} within a period "
               f"(shortest bound on the span of {n + 1} consecutive starts: {shortest if shortest is None else round(shortest, 3)} s; "
               f"spans under the period: {over})")

    bad = []
    for since, until in run.intervals:
        rows = c.execute("SELECT job_id, at FROM starts WHERE at > %s AND at < %s", (since, until)).fetchall()
        bad += [(since, until, r) for r in rows]
    paused_s = sum((u - s).total_seconds() for s, u in run.intervals)
    claims_between = one(c, "SELECT count(*) FROM starts")
    inside = len(bad)
    tap.ok(len(run.intervals) >= 3 and inside == 0 and run.pause_errors == 0,
           f"no claim committed while paused: {len(run.intervals)} pauses ({paused_s:.1f} s in all), "
           f"{inside} of {claims_between} committed claims inside them", "\n".join(map(str, bad[:10])))

    bad = []
    for key, since, until in run.key_intervals:
        rows = c.execute("SELECT job_id, at FROM starts WHERE key = %s AND at > %s AND at < %s",
                         (key, since, until)).fetchall()
        bad += [(key, since, until, r) for r in rows]
    per_key = {k: sum(1 for i in run.key_intervals if i[0] == k) for k in PAUSED_KEYS}
    key_starts = one(c, "SELECT count(*) FROM starts WHERE key = ANY (%s)", (PAUSED_KEYS,))
    tap.ok(all(n >= 1 for n in per_key.values()) and not bad and run.pause_errors == 0,
           f"no claim of a paused key committed while it was paused: {len(run.key_intervals)} key pauses {per_key} "
           f"({sum((u - s).total_seconds() for _, s, u in run.key_intervals):.1f} s in all), {len(bad)} of "
           f"{key_starts} committed claims of those keys inside them", "\n".join(map(str, bad[:10])))

    checks = run.crash_checks
    tap.ok(len(checks) == run.crashes and all(k and kept and mine == 0 for k, kept, _, mine, _ in checks),
           f"each crash restart kept the paused key's pause: {len(checks)} of {run.crashes} crashes with a key paused "
           f"(key, its row of ck.paused_keys kept, its jobs waiting, of them a claim took after the restart, other "
           f"jobs it took): {checks}")

    left = one(c, "SELECT count(*) FROM ck.paused_keys")
    rows = c.execute("""
        SELECT q.key, count(*), count(*) FILTER (WHERE EXISTS (SELECT FROM effects AS e WHERE e.job_id = q.job_id)),
               count(*) FILTER (WHERE EXISTS (SELECT FROM work_dead AS d WHERE d.id = q.job_id)),
               count(*) FILTER (WHERE EXISTS (SELECT FROM work AS w WHERE w.id = q.job_id))
        FROM enqueued AS q WHERE q.key = ANY (%s) GROUP BY q.key ORDER BY q.key""", (PAUSED_KEYS,)).fetchall()
    tap.ok(left == 0 and len(rows) == len(PAUSED_KEYS) and all(n == done + dead and waiting == 0
                                                                for _, n, done, dead, waiting in rows),
           f"the paused keys' jobs after the last resume, none left parked or lost: {left} keys still paused; "
           f"(key, jobs, completed, dead letters, still queued): {rows}")

    late, no_deadline, n_effects = c.execute(
        "SELECT count(*) FILTER (WHERE before_ack >= timeout_at), count(*) FILTER (WHERE timeout_at IS NULL), count(*) "
        "FROM effects").fetchone()
    buried_timeout = one(c, "SELECT count(*) FROM work_history WHERE error = 'timeout'")
    tap.ok(late == 0 and no_deadline == 0 and run.counts["stalled"] > 0 and run.counts["stalled_accepted"] == 0
           and buried_timeout > 0,
           f"no completion accepted after its attempt's deadline: {n_effects} accepted, {late} late, {no_deadline} "
           f"without a deadline; {run.counts['stalled_accepted']} of {run.counts['stalled']} attempts stalled past "
           f"the timeout accepted ({buried_timeout} jobs buried with 'timeout')")


def main(argv):
    if len(argv) != 2 or argv[1] not in SIZES:
        print(f"usage: {argv[0]} full|short", file=sys.stderr)
        return 2
    mode = argv[1]
    size = SIZES[mode]
    tap = Tap()
    server = Server()
    started = time.monotonic()
    offset = server.log_size()
    tap.comment(f"queue in production ({mode}) on PostgreSQL {server.version}: {size}")
    run = Run(size)
    try:
        setup(size)
        threads = [threading.Thread(target=worker, args=(run, i), daemon=True) for i in range(size["workers"])]
        side = [threading.Thread(target=f, args=(run,), daemon=True) for f in (pauser, key_pauser, producer)]
        for t in threads + side:
            t.start()
        chaos_started = time.monotonic()
        chaos(run, server)
        time.sleep(max(0.0, size["load_s"] - (time.monotonic() - chaos_started)))
        run.stop_chaos.set()
        for t in side:
            t.join(60)
        run.draining.set()
        tap.ok(not any(t.is_alive() for t in side) and run.crashes == size["crashes"] and run.kills == size["kills"],
               f"{time.monotonic() - chaos_started:.0f} s under load: {run.crashes} crash restarts, {run.kills} worker "
               f"backends terminated, {len(run.intervals)} pauses, {len(run.key_intervals)} key pauses; {run.counts}")
        c = reconnect("qp_check")
        tap.ok(one(c, "SELECT NOT paused FROM ck.queue_stats('work')")
               and one(c, "SELECT count(*) = 0 FROM ck.paused_keys WHERE queue = 'work'::regclass"),
               "the queue and its keys are resumed for the drain")
        drained = wait_for(lambda: one(c, "SELECT count(*) = 0 FROM work"), DRAIN_BOUND_S, 0.2)
        tap.comment(f"drained: {bool(drained)} after {time.monotonic() - chaos_started:.0f} s")
        run.stop_all.set()
        for t in threads:
            t.join(30)
        tap.ok(not run.errors and not any(t.is_alive() for t in threads),
               "workers, pausers and producer met no error but lost connections", "\n".join(run.errors[:20]))
        check(tap, run, c)
        c.close()
    except Exception:   # noqa: BLE001
        tap.ok(False, "the run went to its end", traceback.format_exc())
        run.stop_all.set()
        run.stop_chaos.set()
        server.ensure_running()
    log = server.log_since(offset)
    killed = len(re.findall(r"terminated by signal 9", log))
    bad_lines = [line for line in log.splitlines()
                 if "PANIC" in line or "TRAP:" in line or ("terminated by signal" in line and "signal 9" not in line)
                 or re.search(r"exited with exit code ([02-9]|1[0-9])", line)]
    tap.ok(killed == run.crashes and not bad_lines,
           f"server log: no server process died but the {run.crashes} killed on purpose ({killed} terminated by "
           f"signal 9; no PANIC, assertion, other signal or abnormal exit)", "\n".join(bad_lines[:20]))
    if tap.failed == 0:
        drop_db(DB)
    tap.comment(f"queue_production.py {mode}: {time.monotonic() - started:.0f} s, {tap.n} checks, {tap.failed} failed")
    tap.plan()
    return 0 if tap.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
