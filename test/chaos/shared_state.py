"""test/chaos/shared_state.sh's body: the shared state without a preload (0.4.0).

    python3 shared_state.py full|short

Without concurrency_kit in shared_preload_libraries, the claim frontier, claim_wait's wake-up on
commit and the activity counters live in one dynamic shared memory segment that the first use of a
queue after the server's start makes; every other backend attaches at its own first queue call or
queue trigger. Four parts, each on a database of its own:

  early     backends that loaded the library before the state existed, and backends that came
            after, enqueue, claim and complete together: every job once, the frontier in use, the
            counters exact, and claim_wait woken by a commit across the two kinds of backends.
  crash     workers through SIGKILLs of a backend (the postmaster's crash restart): exactly-once
            across the restarts, and the state made anew (no frontier, counters from zero).
  recreate  DROP EXTENSION ... CASCADE and CREATE EXTENSION in the running server: a new queue
            works, with a session that was open across the two.
  frontier  plain INSERTs of several priorities from backends whose first contact with the library
            is the queue's trigger, claimed by others: no job waits for the periodic full claim.

Prints numbered TAP and a report ('#' lines). Needs psycopg 3 and the cluster of test/cluster.sh,
restarted without the preload by shared_state.sh (PGHOST, PGPORT, PGUSER, CK_SERVER_LOG). It
restarts the server and kills a backend; it leaves the server running.
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

SIZES = {
    #          early load s, crash rounds, load s a round, frontier load s
    "short": dict(early_s=3, crashes=1, crash_load_s=3, frontier_s=8),
    "full": dict(early_s=20, crashes=3, crash_load_s=10, frontier_s=60),
}
FULL_CLAIM_INTERVAL_S = 10     # concurrency_kit.full_claim_interval of the frontier part's claims
# Half the interval: a job the frontier passed without a lowering waits for a full claim that takes it (up to one
# interval for the first in claim order, about one more for each further priority with such a job; inserts with the
# triggers off, which nothing records, waited 10 to 40 s in this part).
DRAIN_BOUND_S = 5              # every job claimed this soon after the producers stop
WAIT_BOUND_S = 5               # and none waited longer than this from its insert to its claim
WAKE_BOUND_MS = 2000           # a waiter woken by a commit returns this soon after it (max_wait is 10 s)
KILLS = [0]                    # SIGKILLs sent by this run (the server log must show these and no other)


def lost(exc):
    """True when exc means the connection is gone (the crash restart ended it)."""
    return isinstance(exc, (psycopg.OperationalError, psycopg.errors.AdminShutdown,
                            psycopg.errors.CrashShutdown, psycopg.errors.CannotConnectNow))


def restart(server):
    """pg_ctl restart -m fast: every backend and the shared state start anew."""
    r = server._run([server.pg_ctl, "-D", server.data, "-l", server.log, "-m", "fast", "-w", "-t", "120",
                     "restart"], 150)
    return r.returncode == 0 and server.wait_ready(60), (r.stdout + r.stderr).strip()


class StateProbe:
    """Whether the shared state's segment exists, where the server shows it: on 15 and 16 the handle's
    struct in pg_shmem_allocations, on 18+ the DSM registry's view; 17 shows neither (None)."""

    def __init__(self):
        with connect("postgres") as c:
            major = int(one(c, "SHOW server_version_num")) // 10000
            registry = one(c, "SELECT to_regclass('pg_catalog.pg_dsm_registry_allocations') IS NOT NULL")
        if major < 17:
            self.sql = "SELECT count(*) FROM pg_shmem_allocations WHERE name ~ '^concurrency_kit [0-9]'"
        elif registry:
            self.sql = "SELECT count(*) FROM pg_dsm_registry_allocations WHERE name ~ '^concurrency_kit [0-9]'"
        else:
            self.sql = None
        self.where = {True: "pg_shmem_allocations", False: "pg_dsm_registry_allocations"}[major < 17]

    def exists(self):
        if self.sql is None:
            return None
        with connect("postgres") as c:
            return one(c, self.sql) > 0


def check_state(tap, probe, expected, description):
    """A check of the probe, or a skip where the server cannot show the segment."""
    got = probe.exists()
    if got is None:
        tap.n += 1
        print(f"ok {tap.n} - {description} # SKIP PostgreSQL 17 shows no DSM registry", flush=True)
        return
    tap.ok(got == expected, f"{description} ({probe.where})", f"segment present: {got}")


def activity(conn, queue):
    """ck.queue_activity's counters of queue as a dict (empty: no row)."""
    row = conn.execute("SELECT enqueued, claimed, completed, failed, retried, buried, cancelled, lost_acks, duplicates "
                       "FROM ck.queue_activity() WHERE queue = %s::regclass", (queue,)).fetchone()
    names = ("enqueued", "claimed", "completed", "failed", "retried", "buried", "cancelled", "lost_acks", "duplicates")
    return {} if row is None else dict(zip(names, row))


class Workers:
    """Threads running fn(index, conn, stop) each on its own connection; errors kept."""

    def __init__(self, conns, fn):
        self.stop = threading.Event()
        self.errors = []
        self.lost = 0
        self.threads = [threading.Thread(target=self._run, args=(i, c, fn), daemon=True) for i, c in enumerate(conns)]
        for t in self.threads:
            t.start()

    def _run(self, i, conn, fn):
        try:
            fn(i, conn, self.stop)
        except Exception as e:   # noqa: BLE001 -- every error is reported
            if lost(e):
                self.lost += 1
            else:
                self.errors.append(f"worker {i}: {type(e).__name__}: {e}".strip())

    def join(self, timeout=60):
        self.stop.set()
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)


def wait_sleeping(pid, timeout=10):
    """True once backend pid sleeps in claim_wait (wait event class Extension)."""
    def sleeping():
        with connect("postgres") as c:
            return one(c, "SELECT wait_event_type = 'Extension' AND state = 'active' FROM pg_stat_activity "
                           "WHERE pid = %s", (pid,))
    return bool(wait_for(sleeping, timeout, 0.01))


def wake_across(tap, db, waiter, committer, queue, label):
    """waiter sleeps in claim_wait on queue (max_wait 10 s); committer enqueues one job and commits. Checks
    that the waiter gets the job within WAKE_BOUND_MS of the commit: with claim_wait_mode 'commit' a waiter
    looks again only when woken or at max_wait, so only the commit's wake-up, reaching it through the
    shared state, returns it that soon."""
    result = {}

    def wait():
        try:
            row = waiter.execute("SELECT count(*), extract(epoch FROM clock_timestamp())::float8 "
                                 f"FROM ck.claim_wait('{queue}', 1, NULL, '10 seconds')").fetchone()
            result["got"], result["at"] = row
        except Exception as e:   # noqa: BLE001
            result["error"] = f"{type(e).__name__}: {e}"

    pid = waiter.info.backend_pid
    t = threading.Thread(target=wait, daemon=True)
    t.start()
    asleep = wait_sleeping(pid)
    with committer.transaction():
        committer.execute(f"SELECT ck.enqueue('{queue}')")
        committed = one(committer, "SELECT extract(epoch FROM clock_timestamp())::float8")
    t.join(15)
    ms = (result["at"] - committed) * 1000 if "at" in result else None
    mode = one(waiter, "SELECT ck.claim_wait_mode()") if "error" not in result else None
    tap.ok(asleep and result.get("got") == 1 and ms is not None and ms < WAKE_BOUND_MS and mode == "commit",
           f"{label}: claim_wait (mode '{mode}') is woken by the commit: its job "
           f"{'%.1f ms' % ms if ms is not None else 'never'} after the COMMIT (bound {WAKE_BOUND_MS} ms, max_wait 10 s)",
           f"asleep before the commit: {asleep}; result: {result}")


# ------------------------------------------------------------------------------------------------
# early: backends that loaded the library before the state existed

def part_early(tap, server, probe, size):
    db = "ck_shared_early"
    recreate_db(db)
    with connect(db) as c:
        c.execute("""
            CREATE EXTENSION concurrency_kit;
            SELECT ck.create_queue('jobs', lease => '5 minutes');
            SELECT ck.create_queue('wake_a');
            SELECT ck.create_queue('wake_b');
            CREATE TABLE enqueued (job_id bigint PRIMARY KEY, by text);
            CREATE TABLE claims (job_id bigint, lease_token bigint, by text);
            CREATE TABLE done (job_id bigint, by text);
            CREATE INDEX ON done (job_id);
            CREATE INDEX ON claims (job_id);
        """)
    # Made by the set-up: gone with the restart.
    ok, out = restart(server)
    if not tap.ok(ok, "the server restarted (no backend, no shared state)", out):
        return
    # Early: three sessions load the library in three ways that use no queue.
    early = [connect(db, f"ss_early_{i}") for i in range(3)]
    early[0].execute("LOAD 'concurrency_kit'")
    early[1].execute("SELECT ck.sqlstate_action('40001')")
    early[2].execute("SELECT count(*) FROM ck.held_locks()")
    tap.comment("3 early sessions loaded the library: LOAD, ck.sqlstate_action, ck.held_locks")
    check_state(tap, probe, False,
                "the shared state does not exist yet: sessions that loaded the library without using a queue did not make it")

    late = [connect(db, f"ss_late_{i}") for i in range(3)]
    late[0].execute("INSERT INTO enqueued SELECT ck.enqueue('jobs', '{\"first\": true}'), 'late0'")
    check_state(tap, probe, True, "the first ck.enqueue made the shared state")

    # Two early and two late sessions enqueue, claim and complete together.
    def work(i, conn, stop):
        by = ("early" if i < 2 else "late") + str(i)
        idle = 0
        while True:
            if not stop.is_set():
                with conn.transaction():
                    conn.execute("INSERT INTO enqueued SELECT ck.enqueue('jobs', jsonb_build_object('by', %s::text)), %s "
                                 "FROM generate_series(1, 3)", (by, by))
            claimed = conn.execute("INSERT INTO claims SELECT id, lease_token, %s FROM ck.claim('jobs', 2) "
                                   "RETURNING job_id, lease_token", (by,)).fetchall()
            for job, token in claimed:
                with conn.transaction():
                    if one(conn, "SELECT ck.try_complete('jobs', %s, %s)", (job, token)):
                        conn.execute("INSERT INTO done VALUES (%s, %s)", (job, by))
            idle = idle + 1 if not claimed else 0
            if stop.is_set() and idle >= 3:
                return

    workers = Workers([early[0], early[1], late[1], late[2]], work)
    time.sleep(size["early_s"])
    finished = workers.join(60)
    tap.ok(finished and not workers.errors and workers.lost == 0,
           "two early and two late sessions enqueued, claimed and completed without an error",
           "\n".join(workers.errors) or f"finished: {finished}, lost connections: {workers.lost}")

    c = late[0]
    n = one(c, "SELECT count(*) FROM enqueued")
    by_kind = dict(c.execute("SELECT regexp_replace(by, '[0-9]+$', ''), count(*) FROM claims GROUP BY 1").fetchall())
    tap.comment(f"{n} jobs enqueued; claims by early and late sessions: {by_kind}")
    bad = c.execute("""
        SELECT (SELECT count(*) FROM enqueued AS e WHERE (SELECT count(*) FROM done AS d WHERE d.job_id = e.job_id) <> 1),
               (SELECT count(*) FROM done AS d WHERE NOT EXISTS (SELECT FROM enqueued AS e WHERE e.job_id = d.job_id)),
               (SELECT count(*) FROM (SELECT job_id FROM claims GROUP BY job_id HAVING count(*) > 1) AS twice),
               (SELECT count(*) FROM claims), (SELECT count(*) FROM jobs), (SELECT count(*) FROM jobs_dead)
    """).fetchone()
    tap.ok(n > 100 and bad[0] == 0 and bad[1] == 0,
           f"every one of the {n} jobs was completed exactly once (jobs not done once: {bad[0]}, done rows of no job: {bad[1]})")
    tap.ok(bad[2] == 0 and bad[3] == n and bad[4] == 0 and bad[5] == 0,
           f"every job was claimed once: {bad[3]} claims of {n} jobs, {bad[2]} claimed twice; "
           f"{bad[4]} left in the queue, {bad[5]} dead letters")
    tap.ok(by_kind.get("early", 0) > 0 and by_kind.get("late", 0) > 0,
           f"both kinds of session claimed jobs (early {by_kind.get('early', 0)}, late {by_kind.get('late', 0)})")

    paths = [one(s, "SELECT path FROM ck.claim_path('jobs')") for s in (early[0], late[1])]
    frontier = c.execute("SELECT priority FROM ck_internal.claim_frontier('jobs')").fetchall()
    tap.ok(paths == ["frontier", "frontier"] and frontier == [(0,)],
           f"claims of the queue go from its frontier: ck.claim_path says {paths} (an early and a late session), "
           f"ck.claim_frontier knows priorities {[p for p, in frontier]}")

    seen = [activity(s, "jobs") for s in (early[0], late[0])]
    want = {"enqueued": n, "claimed": n, "completed": n, "failed": 0, "retried": 0, "buried": 0, "cancelled": 0,
            "lost_acks": 0, "duplicates": 0}
    tap.ok(seen[0] == want and seen[1] == want,
           f"ck.queue_activity counts {n} enqueued, claimed and completed, nothing else, read from an early and "
           f"a late session", f"want {want}\nearly sees {seen[0]}\nlate sees  {seen[1]}")

    # claim_wait across the two kinds: early[2] has used no queue yet (its first call is the wait).
    wake_across(tap, db, early[2], late[1], "wake_a", "an early session waits, a late one commits")
    wake_across(tap, db, late[2], early[1], "wake_b", "a late session waits, an early one commits")
    for s in early + late:
        s.close()


# ------------------------------------------------------------------------------------------------
# crash: SIGKILL of a backend under load, the crash restart, and on

CRASH_SETUP = """
CREATE EXTENSION concurrency_kit;
SELECT ck.create_queue('jobs', lease => '2 seconds', max_attempts => 1000);
CREATE TABLE enqueued (job_id bigint PRIMARY KEY, phase int);
CREATE TABLE claims (job_id bigint, lease_token bigint, attempt int, lease_until timestamptz, phase int,
                     claimed_at timestamptz DEFAULT clock_timestamp());
CREATE TABLE done (job_id bigint, phase int);
CREATE INDEX ON done (job_id);
CREATE INDEX ON claims (job_id);
"""


def part_crash(tap, server, probe, size):
    db = "ck_shared_crash"
    recreate_db(db)
    with connect(db) as c:
        c.execute(CRASH_SETUP)
    lost_acks = {}   # phase -> completions that found the lease lost (counted by ck as lost_acks)
    lock = threading.Lock()

    def worker_for(phase):
        def work(i, conn, stop):
            idle = 0
            while True:
                if not stop.is_set():
                    with conn.transaction():
                        conn.execute("INSERT INTO enqueued SELECT ck.enqueue('jobs'), %s FROM generate_series(1, 2)",
                                     (phase,))
                claimed = conn.execute("INSERT INTO claims (job_id, lease_token, attempt, lease_until, phase) "
                                       "SELECT id, lease_token, attempts, lease_until, %s FROM ck.claim('jobs', 2) "
                                       "RETURNING job_id, lease_token", (phase,)).fetchall()
                for job, token in claimed:
                    with conn.transaction():
                        if one(conn, "SELECT ck.try_complete('jobs', %s, %s)", (job, token)):
                            conn.execute("INSERT INTO done VALUES (%s, %s)", (job, phase))
                        else:
                            with lock:
                                lost_acks[phase] = lost_acks.get(phase, 0) + 1
                idle = idle + 1 if not claimed else 0
                if stop.is_set() and idle >= 3 and one(conn, "SELECT count(*) FROM jobs") == 0:
                    return
                if stop.is_set() and not claimed:
                    time.sleep(0.1)   # leases cut by the crash run out within 2 s
        return work

    offset = server.log_size()
    kills = 0
    phase = 1
    for round_ in range(1, size["crashes"] + 1):
        conns = [connect(db, f"ss_crash_{i}") for i in range(4)]
        pids = [c.info.backend_pid for c in conns]
        workers = Workers(conns, worker_for(phase))
        time.sleep(size["crash_load_s"])
        victim = pids[0]
        with connect(db) as c:
            before = one(c, "SELECT count(*) FROM enqueued")
        mark = server.log_size()
        os.kill(victim, signal.SIGKILL)
        kills += 1
        KILLS[0] += 1
        reinit = wait_for(lambda: "all server processes terminated; reinitializing" in server.log_since(mark), 30)
        ready = server.wait_ready(60)
        finished = workers.join(30)
        tap.ok(bool(reinit) and ready and finished and not workers.errors,
               f"crash {round_}: SIGKILL of backend {victim} under load ({before} jobs enqueued so far): the postmaster "
               f"reinitialized, the server is back, the workers lost their connections ({workers.lost} of 4)",
               "\n".join(workers.errors) or f"reinit logged: {bool(reinit)}, ready: {ready}, finished: {finished}")
        for c in conns:
            c.close()
        phase += 1
        # Nothing has used a queue since the restart: no shared state yet, then made anew with nothing in it.
        check_state(tap, probe, False, f"crash {round_}: after the crash restart the shared state is gone until a queue is used")
        with connect(db, "ss_crash_probe") as c:
            frontier = c.execute("SELECT priority FROM ck_internal.claim_frontier('jobs')").fetchall()
            path = one(c, "SELECT path FROM ck.claim_path('jobs')")
            counts = activity(c, "jobs")
        tap.ok(frontier == [] and path == "discover",
               f"crash {round_}: the frontier is made anew: ck.claim_frontier has no rows and ck.claim_path says "
               f"'{path}' before the first claim", f"frontier: {frontier}")
        tap.ok(not counts or not any(counts.values()),
               f"crash {round_}: ck.queue_activity starts over (jobs: {counts or 'no row'})")
        check_state(tap, probe, True, f"crash {round_}: the first queue call after the restart made the shared state")

    # The last phase: load, then drain (leases cut by the last crash run out and their jobs are claimed again).
    conns = [connect(db, f"ss_crash_{i}") for i in range(4)]
    workers = Workers(conns, worker_for(phase))
    time.sleep(size["crash_load_s"])
    started = time.monotonic()
    finished = workers.join(60)
    tap.ok(finished and not workers.errors and workers.lost == 0,
           f"after the last restart the workers went on and drained the queue in {time.monotonic() - started:.1f} s",
           "\n".join(workers.errors) or f"finished: {finished}, lost: {workers.lost}")
    with connect(db) as c:
        n, per_phase = one(c, "SELECT count(*) FROM enqueued"), c.execute(
            "SELECT phase, count(*) FROM enqueued GROUP BY 1 ORDER BY 1").fetchall()
        bad = c.execute("""
            SELECT (SELECT count(*) FROM enqueued AS e WHERE (SELECT count(*) FROM done AS d WHERE d.job_id = e.job_id) <> 1),
                   (SELECT count(*) FROM done AS d WHERE NOT EXISTS (SELECT FROM enqueued AS e WHERE e.job_id = d.job_id)),
                   (SELECT count(*) FROM jobs), (SELECT count(*) FROM jobs_dead),
                   (SELECT count(*) FROM enqueued AS e WHERE e.phase < %s
                      AND (SELECT count(*) FROM done AS d WHERE d.job_id = e.job_id) <> 1)
        """, (phase,)).fetchone()
        tap.ok(n > 0 and bad[0] == 0 and bad[1] == 0 and bad[2] == 0 and bad[3] == 0,
               f"exactly once across {kills} crash restarts: each of the {n} jobs (per phase: {per_phase}) completed once "
               f"({bad[0]} not once, {bad[1]} completions of no job, {bad[2]} left, {bad[3]} dead)",
               f"of the jobs committed before the last crash, {bad[4]} were not completed exactly once")
        # Two committed claims of one job are fine only when the first lease had run out: the second claim
        # read run_at (the first lease's end) <= its now().
        overlap, same = c.execute("""
            SELECT (SELECT count(*) FROM claims AS a JOIN claims AS b ON a.job_id = b.job_id AND a.attempt < b.attempt
                    WHERE b.claimed_at < a.lease_until),
                   (SELECT count(*) FROM (SELECT FROM claims GROUP BY job_id, attempt HAVING count(*) > 1) AS s)
        """).fetchone()
        reclaimed = one(c, "SELECT count(*) FROM claims WHERE attempt > 1")
        tap.ok(overlap == 0 and same == 0,
               f"no job was held by two committed claims at once ({overlap} overlapping leases, {same} attempts "
               f"claimed twice; {reclaimed} claims of a job whose lease had run out)")
        counts = activity(c, "jobs")
        want = {
            "enqueued": one(c, "SELECT count(*) FROM enqueued WHERE phase = %s", (phase,)),
            "claimed": one(c, "SELECT count(*) FROM claims WHERE phase = %s", (phase,)),
            "completed": one(c, "SELECT count(*) FROM done WHERE phase = %s", (phase,)),
            "failed": 0, "retried": 0, "buried": 0, "cancelled": 0,
            "lost_acks": lost_acks.get(phase, 0), "duplicates": 0,
        }
        tap.ok(counts == want,
               "ck.queue_activity counts only what committed since the last crash restart "
               f"(enqueued {want['enqueued']}, claimed {want['claimed']}, completed {want['completed']}, "
               f"lost_acks {want['lost_acks']})", f"want {want}\ngot  {counts}")
    for c in conns:
        c.close()
    log = server.log_since(offset)
    killed = len(re.findall(r"terminated by signal 9", log))
    bad_lines = [line for line in log.splitlines()
                 if "PANIC" in line or "TRAP:" in line or ("terminated by signal" in line and "signal 9" not in line)]
    tap.ok(killed == kills and not bad_lines,
           f"server log: {killed} backends terminated by signal 9 (ours: {kills}), no PANIC, assertion or other signal",
           "\n".join(bad_lines[:20]))


# ------------------------------------------------------------------------------------------------
# recreate: DROP EXTENSION ... CASCADE, CREATE EXTENSION, in the running server

def part_recreate(tap, server, probe, size):
    db = "ck_shared_recreate"
    recreate_db(db)
    postmaster = server.postmaster_pid()
    admin = connect(db, "ss_recreate_admin")
    admin.execute("""
        CREATE EXTENSION concurrency_kit;
        SELECT ck.create_queue('before');
        SELECT count(ck.enqueue('before', '{}', now(), g % 2)) FROM generate_series(1, 10) AS g;
    """)
    # A session that used the old extension's queue, and stays open across the drop and the create.
    old = connect(db, "ss_recreate_old")
    old.execute("SELECT count(ck.complete('before', id, lease_token)) FROM ck.claim('before', 4)")
    admin.execute("DROP EXTENSION concurrency_kit CASCADE")
    admin.execute("CREATE EXTENSION concurrency_kit")
    admin.execute("SELECT ck.create_queue('after', lease => '5 minutes')")
    admin.execute("CREATE TABLE done (job_id bigint, by text)")
    new = connect(db, "ss_recreate_new")
    n = one(new, "SELECT count(ck.enqueue('after', jsonb_build_object('g', g), now(), g % 3)) "
                 "FROM generate_series(1, 30) AS g")
    for _ in range(50):
        got = 0
        for name, s in (("old", old), ("new", new)):
            got += len(s.execute("WITH c AS (SELECT * FROM ck.claim('after', 4)) "
                                 "INSERT INTO done SELECT c.id, %s FROM c WHERE ck.try_complete('after', c.id, c.lease_token) "
                                 "RETURNING 1", (name,)).fetchall())
        if got == 0:
            break
    res = admin.execute("""
        SELECT (SELECT count(*) FROM done), (SELECT count(DISTINCT job_id) FROM done), (SELECT count(*) FROM after),
               (SELECT count(DISTINCT by) FROM done)
    """).fetchone()
    tap.ok(server.postmaster_pid() == postmaster and res[0] == n and res[1] == n and res[2] == 0 and res[3] == 2,
           f"after DROP EXTENSION ... CASCADE and CREATE EXTENSION in the running server, a new queue's {n} jobs were "
           f"claimed and completed once each ({res[0]} completions, {res[1]} jobs) by a session open across the two "
           f"and a new one", f"result {res}; postmaster {postmaster} -> {server.postmaster_pid()}")
    paths = [one(s, "SELECT path FROM ck.claim_path('after')") for s in (old, new)]
    # After the drain every claim has passed the jobs: the priorities are known as long as no plain SQL reset them.
    new.execute("SELECT ck.enqueue('after', '{}', now(), 1)")
    new.execute("SELECT count(ck.complete('after', id, lease_token)) FROM ck.claim('after', 1)")
    frontier = sorted(p for p, in new.execute("SELECT priority FROM ck_internal.claim_frontier('after')").fetchall())
    tap.ok(paths == ["frontier", "frontier"] and frontier and set(frontier) <= {0, 1, 2},
           f"the new queue's claims go from its frontier (ck.claim_path: {paths}; ck.claim_frontier knows {frontier})")
    counts = activity(new, "after")
    tap.ok(counts.get("enqueued") == n + 1 and counts.get("claimed") == n + 1 and counts.get("completed") == n + 1,
           f"ck.queue_activity counts the new queue from zero: enqueued, claimed and completed {n + 1}",
           f"got {counts}")
    left = one(admin, "SELECT to_regclass('before') IS NOT NULL")
    tap.comment(f"the old queue's table {'survived the drop as a plain table' if left else 'went with the extension'}")
    for s in (admin, old, new):
        s.close()


# ------------------------------------------------------------------------------------------------
# frontier: plain INSERTs of several priorities from late backends, under load

def part_frontier(tap, server, probe, size):
    db = "ck_shared_frontier"
    recreate_db(db)
    with connect(db) as c:
        c.execute("""
            CREATE EXTENSION concurrency_kit;
            SELECT ck.create_queue('prio', lease => '5 minutes');
            CREATE TABLE claims (job_id bigint, lease_token bigint, priority int, inserted_at timestamptz,
                                 claimed_at timestamptz);
        """)
    inserted = [0, 0]
    rolled_back_claims = [0]

    # Producers: their first statement is a plain INSERT (the library is loaded and the state attached by the
    # queue's trigger). Jobs of priorities -2..2, run_at up to 2 s in the past, held up to 50 ms before COMMIT
    # so that claims pass their keys first; some transactions roll back.
    def produce(i, conn, stop):
        rng = random.Random(i)
        while not stop.is_set():
            k = rng.randint(1, 4)
            commit = rng.random() < 0.9
            conn.execute("BEGIN")
            conn.execute("INSERT INTO prio (payload, priority, run_at) "
                         "SELECT jsonb_build_object('at', clock_timestamp(), 'p', p), p, now() - random() * interval '2 seconds' "
                         "FROM (SELECT (random() * 4)::int - 2 AS p FROM generate_series(1, %s)) AS g", (k,))
            time.sleep(rng.random() * 0.05)
            conn.execute("COMMIT" if commit else "ROLLBACK")
            if commit:
                inserted[i] += k
            time.sleep(0.01)

    # Consumers: ck.claim then ck.complete in one transaction, the claims recorded in it; one transaction in ten
    # rolls back (its jobs become claimable again); after an empty claim, ck.claim_wait (up to 50 ms).
    def consume(i, conn, stop):
        rng = random.Random(100 + i)
        conn.execute(f"SET concurrency_kit.full_claim_interval = '{FULL_CLAIM_INTERVAL_S}s'")
        claim = "ck.claim('prio', 5)"
        while True:
            conn.execute("BEGIN")
            rows = conn.execute("INSERT INTO claims SELECT id, lease_token, (payload->>'p')::int, "
                                f"(payload->>'at')::timestamptz, clock_timestamp() FROM {claim} "
                                "RETURNING job_id, lease_token").fetchall()
            if rows and rng.random() < 0.1:
                conn.execute("ROLLBACK")
                rolled_back_claims[0] += len(rows)
                continue
            for job, token in rows:
                if not one(conn, "SELECT ck.try_complete('prio', %s, %s)", (job, token)):
                    raise AssertionError(f"ck.complete of job {job} found its 5-minute lease lost")
            conn.execute("COMMIT")
            if not rows and stop.is_set():
                return
            claim = "ck.claim('prio', 5)" if rows else "ck.claim_wait('prio', 5, NULL, '50 ms')"

    consumers_conns = [connect(db, f"ss_consumer_{i}") for i in range(2)]
    consumers = Workers(consumers_conns, consume)
    producers_conns = [connect(db, f"ss_producer_{i}") for i in range(2)]
    producers = Workers(producers_conns, produce)
    time.sleep(size["frontier_s"])
    producers.join(30)
    stopped = time.monotonic()
    admin = connect(db, "ss_frontier_admin")
    empty = wait_for(lambda: one(admin, "SELECT count(*) FROM prio") == 0, DRAIN_BOUND_S + 30, 0.05)
    drained = time.monotonic() - stopped
    # The path of a claim in a session set as the consumers are, before they stop.
    admin.execute(f"SET concurrency_kit.full_claim_interval = '{FULL_CLAIM_INTERVAL_S}s'")
    path = one(admin, "SELECT path FROM ck.claim_path('prio')")
    consumers.join(30)
    errors = producers.errors + consumers.errors
    tap.ok(not errors and producers.lost == 0 and consumers.lost == 0,
           "2 producers (plain INSERT, attached by the queue's trigger) and 2 consumers ran without an error",
           "\n".join(errors))
    n = sum(inserted)
    dup, total, distinct, priorities, worst, p99 = admin.execute("""
        SELECT (SELECT count(*) FROM (SELECT job_id FROM claims GROUP BY job_id HAVING count(*) > 1) AS d),
               count(*), count(DISTINCT job_id), count(DISTINCT priority),
               extract(epoch FROM max(claimed_at - inserted_at))::float8,
               extract(epoch FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY claimed_at - inserted_at))::float8
        FROM claims
    """).fetchone()
    tap.comment(f"{n} jobs inserted over {size['frontier_s']} s in {priorities} priorities; {rolled_back_claims[0]} "
                f"claims rolled back; wait from insert to claim: 99th percentile {p99 or 0:.3f} s, worst {worst or 0:.3f} s")
    tap.ok(bool(empty) and drained < DRAIN_BOUND_S,
           f"after the producers stopped, every job was claimed within {drained:.2f} s (bound {DRAIN_BOUND_S} s; "
           f"the periodic full claim comes every {FULL_CLAIM_INTERVAL_S} s)",
           f"jobs left: {one(admin, 'SELECT count(*) FROM prio')}")
    tap.ok(n > 100 and dup == 0 and total == n and distinct == n,
           f"each of the {n} committed inserts was claimed by exactly one committed claim ({total} claims, {dup} twice)")
    tap.ok(worst is not None and worst < WAIT_BOUND_S,
           f"no job waited for the periodic full claim: the longest wait from insert to claim was "
           f"{worst or 0:.2f} s (bound {WAIT_BOUND_S} s, full_claim_interval {FULL_CLAIM_INTERVAL_S} s)")
    known = sorted(p for p, in admin.execute("SELECT priority FROM ck_internal.claim_frontier('prio')").fetchall())
    tap.ok(path == "frontier" and known and set(known) <= {-2, -1, 0, 1, 2},
           f"the consumers' claims went from the frontier (ck.claim_path: '{path}'; ck.claim_frontier knows {known})")
    counts = activity(admin, "prio")
    tap.ok(counts.get("enqueued") == n and counts.get("claimed") == n and counts.get("completed") == n,
           f"ck.queue_activity counts the plain INSERTs and the committed claims: enqueued, claimed, completed {n}",
           f"got {counts}")
    admin.close()
    for c in consumers_conns + producers_conns:
        c.close()


PARTS = ("early", "crash", "recreate", "frontier")


def main(argv):
    if len(argv) < 2 or argv[1] not in SIZES or any(p not in PARTS for p in argv[2:]):
        print(f"usage: {argv[0]} full|short [{'|'.join(PARTS)}...]", file=sys.stderr)
        return 2
    mode = argv[1]
    size = SIZES[mode]
    tap = Tap()
    server = Server()
    with connect("postgres") as c:
        preload = one(c, "SHOW shared_preload_libraries")
    tap.comment(f"shared state without a preload ({mode}) on PostgreSQL {server.version}")
    if not tap.ok("concurrency_kit" not in preload,
                  f"the server runs without the library preloaded (shared_preload_libraries '{preload}')"):
        tap.plan()
        return 1
    probe = StateProbe()
    started = time.monotonic()
    offset = server.log_size()
    for name in argv[2:] or PARTS:
        part_started = time.monotonic()
        tap.comment(f"== {name}")
        try:
            globals()[f"part_{name}"](tap, server, probe, size)
        except Exception:   # a part that breaks down is one failure; the others still run
            tap.ok(False, f"part {name} ran to its end", traceback.format_exc())
            server.ensure_running()
        tap.comment(f"{name}: {time.monotonic() - part_started:.1f} s")
    log = server.log_since(offset)
    killed = len(re.findall(r"terminated by signal 9", log))
    bad_lines = [line for line in log.splitlines()
                 if "PANIC" in line or "TRAP:" in line or ("terminated by signal" in line and "signal 9" not in line)
                 or re.search(r"exited with exit code ([02-9]|1[0-9])", line)]
    tap.ok(killed == KILLS[0] and not bad_lines,
           f"server log of the whole run: no server process died but the {KILLS[0]} killed on purpose "
           f"({killed} terminated by signal 9; no PANIC, assertion, other signal or abnormal exit)", "\n".join(bad_lines[:20]))
    if tap.failed == 0:
        for db in ("ck_shared_early", "ck_shared_crash", "ck_shared_recreate", "ck_shared_frontier"):
            drop_db(db)
    tap.comment(f"shared_state.py {mode}: {time.monotonic() - started:.0f} s, {tap.n} checks, {tap.failed} failed")
    tap.plan()
    return 0 if tap.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
