"""ckworker.py drives concurrency_kit from Python with psycopg 3 (Debian's python3-psycopg) and
prints unnumbered TAP lines ("ok - ...", "not ok - ...", "# ...") that test/client/lib/tap.sh numbers.

    /usr/bin/python3 ckworker.py [--dsn DSN] [--workers 8] queue decrement lock retry unique dependencies
    /usr/bin/python3 ckworker.py --dsn BOUNCER_DSN prepare        (through PgBouncer)

An empty DSN means the PG* environment variables. The database must have been set up with
test/client/lib/setup.sql.
"""
import argparse
import sys
import threading
import time

import psycopg
import psycopg.sql
import psycopg.types.json

failures = 0


def tap(ok, description):
    global failures
    if not ok:
        failures += 1
    print(("ok - " if ok else "not ok - ") + description, flush=True)


def note(text):
    print("# " + text, flush=True)


stats_lock = threading.Lock()
stats = {"heartbeats": 0, "heartbeats_lost": 0, "leases_lost": 0, "failed": 0}


def tally(name):
    with stats_lock:
        stats[name] += 1


class LeaseLost(Exception):
    """The job is someone else's now."""


def work(conn, worker):
    """Claims jobs from queue "jobs" until no job is left. Records each job's effect in the
    transaction that acknowledges the job, and hands a job that raised back with ck.fail."""
    while True:
        job = conn.execute("SELECT id, lease_token, attempts, payload"
                           " FROM ck.claim_wait('jobs', lease => '1 second', max_wait => '200 ms')").fetchone()
        if job is None:  # nothing ready within 200 ms: stop once no job is left at all
            if conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0:
                return
            continue
        id, token, attempt, payload = job
        started = time.monotonic()
        try:
            process(conn, id, token, payload, attempt)
        except LeaseLost:
            tally("leases_lost")
            continue
        except Exception as e:  # the job raised: 'retry' (ready again in 100 ms) or 'dead' (last attempt)
            tally("failed")
            try:
                with conn.transaction():
                    outcome = conn.execute("SELECT ck.fail('jobs', %s, %s, %s, '100 ms')",
                                           (id, token, str(e))).fetchone()[0]
                    conn.execute("INSERT INTO failures (job_id, attempt, outcome) VALUES (%s, %s, %s)",
                                 (id, attempt, outcome))
            except psycopg.Error as e:
                if e.sqlstate != "CK005":  # CK005: the lease was lost, the job is someone else's now
                    raise
                tally("leases_lost")
            continue
        # The effect and the acknowledgement (with a result, kept in the history) in one transaction: it
        # commits only while the lease is ours.
        try:
            with conn.transaction():
                conn.execute("INSERT INTO effects (job_id, n, attempt, worker, held_ms) VALUES (%s, %s, %s, %s, %s)",
                             (id, payload["n"], attempt, worker, int((time.monotonic() - started) * 1000)))
                conn.execute("SELECT ck.complete('jobs', %s, %s, %s)",
                             (id, token, psycopg.types.json.Jsonb({"attempt": attempt, "worker": worker})))
        except psycopg.Error as e:
            if e.sqlstate != "CK005":  # CK005: the lease was lost; the effect rolled back, the job's new holder records it
                raise
            tally("leases_lost")


def process(conn, id, token, payload, attempt):
    """Does a job's work. A slow job runs 2.5 s on a 1 s lease: it heartbeats every 250 ms."""
    if payload["kind"] == "flaky" and attempt == 1:
        raise RuntimeError(f"job {payload['n']} failed on attempt {attempt}")
    if payload["kind"] == "slow":
        end = time.monotonic() + 2.5
        while time.monotonic() < end:
            time.sleep(0.25)
            until = conn.execute("SELECT ck.try_extend_lease('jobs', %s, %s, '1 second')", (id, token)).fetchone()[0]
            tally("heartbeats")
            if until is None:  # NULL: the lease was lost (ck.extend_lease would raise CK005)
                tally("heartbeats_lost")
                raise LeaseLost()


def sell(conn, sku, n):
    """Takes n units of sku: the new quantity, or psycopg.Error with sqlstate CK001 (not enough)
    or CK004 (no such sku). The key argument takes any type, so a parameter for it needs one: psycopg
    sends a str untyped (42P18 "could not determine data type of parameter"); the cast says which."""
    return conn.execute("SELECT ck.decrement('stock', %s::int, 'qty', %s)", (sku, n)).fetchone()[0]


def classify(conn, error):
    """What to do about an error: 'retry', 'busy', 'conflict' (tell the user) or 'error'."""
    if not isinstance(error, psycopg.Error) or error.sqlstate is None:
        return "error"
    return conn.execute("SELECT ck.sqlstate_action(%s)", (error.sqlstate,)).fetchone()[0]


def relay(conn, partition, f):
    """Runs f in a transaction that holds advisory lock relay:partition. Waits at most 500 ms for
    the lock, then raises psycopg.errors.LockNotAvailable (55P03, ck.sqlstate_action: 'busy')."""
    with conn.transaction():
        conn.execute("SELECT ck.xact_lock('relay', %s, '500 ms')", (partition,))
        return f(conn)  # the lock goes with the transaction


def take_seat(conn, customer):
    """Books a seat of show 7 for customer while fewer than 20 are taken. ck.retry runs the
    statements in a SERIALIZABLE transaction, again after 40001/40P01; call it in autocommit."""
    sql = ("SELECT pg_sleep(0.01); -- widens the race for the test\n"
           "INSERT INTO seats (show_id, customer, attempt)"
           " SELECT 7, " + quote_literal(customer) + ", ck.current_attempt()"
           " WHERE (SELECT count(*) FROM seats WHERE show_id = 7) < 20")
    return conn.execute("CALL ck.retry(%s, 'serializable', 20)", (sql,)).fetchone()[0]


def enqueue_once(conn, key, payload):
    """Enqueues a job for key unless one is already waiting or running: (id, inserted)."""
    return conn.execute("SELECT id, inserted FROM ck.enqueue_unique('reports', %s, %s::jsonb)",
                        (key, psycopg.types.json.Jsonb(payload))).fetchone()


def cancel(conn, id):
    """'cancelled' (it was waiting), 'cancelling' (a worker runs it: its next ack finds the lease lost) or 'gone'."""
    return conn.execute("SELECT ck.cancel('reports', %s)", (id,)).fetchone()[0]


def enqueue_after(conn, queue, payload, after):
    """Enqueues a job that waits until every job in after (ids) that is still in the queue has
    completed; if one of them is buried or cancelled instead, so is this job, with the reason."""
    return conn.execute("SELECT ck.enqueue(%s, %s, after => %s::bigint[])",
                        (queue, psycopg.types.json.Jsonb(payload), after)).fetchone()[0]


def dead_reason(conn, queue, id):
    """Why job id is in the queue's dead letters (its last_error); None while it is not there."""
    dead = psycopg.sql.Identifier(queue + "_dead")
    row = conn.execute(psycopg.sql.SQL("SELECT last_error FROM {} WHERE id = %s").format(dead), (id,)).fetchone()
    return row[0] if row else None


def quote_literal(s):
    return "'" + s.replace("'", "''") + "'"


def edit_profile(conn, id, change, attempts=5):
    """Optimistic read-modify-write of profile id: reads the row, computes change(row), a dict of
    new column values, and writes it with ck.update_if_version. A writer in between makes
    the write stale (CK006, ck.sqlstate_action: 'retry'): read again, apply again, at most
    attempts times; any other error is raised at once. Returns (new version, attempts used)."""
    for attempt in range(1, attempts + 1):
        row = conn.execute("SELECT visits, note, version FROM profiles WHERE id = %s", (id,)).fetchone()
        if row is None:
            raise LookupError(f"no profile {id}")
        try:
            version = conn.execute("SELECT ck.update_if_version('profiles', %s::int, %s, %s)",
                                   (id, row[2], psycopg.types.json.Jsonb(change(row)))).fetchone()[0]
            return version, attempt
        except psycopg.Error as e:
            if e.sqlstate != "CK006" or attempt == attempts:
                raise


def sqlstate(error):
    return getattr(error, "sqlstate", None)


def run_threads(n, target):
    threads = [threading.Thread(target=target, args=(i,)) for i in range(1, n + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def drain(dsn, workers, what):
    """Runs work() in threads, a connection each, until queue "jobs" is empty; one TAP line: what they did."""
    errors = []

    def worker(i):
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                work(conn, i)
        except Exception as e:
            errors.append(f"worker {i}: {e!r}")

    started = time.monotonic()
    run_threads(workers, worker)
    tap(not errors, f"python: {workers} workers (threads, a connection each) {what}"
                    f" in {time.monotonic() - started:.1f} s without an error")
    for e in errors:
        note(e)


def test_queue(dsn, workers):
    drain(dsn, workers, "drained the queue")
    tap(stats["heartbeats"] > 0 and stats["heartbeats_lost"] == 0,
        f"python: every heartbeat of the slow jobs (ck.try_extend_lease, {stats['heartbeats']} in all) kept the lease")
    note(f"{stats['failed']} jobs raised and were handed back with ck.fail;"
         f" {stats['leases_lost']} acknowledgements found the lease lost")


def test_decrement(dsn, workers):
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            sell(conn, 7, 5)  # 3 in stock
            error = None
        except psycopg.Error as e:
            error = e
        tap(sqlstate(error) == "CK001", f"python: ck.decrement beyond stock: psycopg.Error with sqlstate CK001 ({error!r})")
        detail = error.diag.message_detail if error is not None else None
        tap(detail is not None and "available 3" in detail and "requested 5" in detail,
            f"python: ... and the DETAIL with the numbers ({detail!r})")
        tap(classify(conn, error) == "conflict", "python: ck.sqlstate_action classifies CK001 as conflict")
        qty = conn.execute("SELECT qty FROM stock WHERE sku = 7").fetchone()[0]
        tap(qty == 3, f"python: the failed decrement changed nothing (qty {qty})")
        try:
            sell(conn, 999, 1)
            error = None
        except psycopg.Error as e:
            error = e
        tap(sqlstate(error) == "CK004" and classify(conn, error) == "conflict",
            f"python: no such sku: CK004, a conflict ({error!r})")

    results = {"sold": 0, "refused": 0, "other": []}

    def seller(i):
        with psycopg.connect(dsn, autocommit=True) as conn:
            for _ in range(5):
                try:
                    sell(conn, 42, 1)
                    outcome = "sold"
                except psycopg.Error as e:
                    outcome = "refused" if e.sqlstate == "CK001" else repr(e)
                with stats_lock:
                    if outcome in ("sold", "refused"):
                        results[outcome] += 1
                    else:
                        results["other"].append(outcome)

    run_threads(workers, seller)
    with psycopg.connect(dsn, autocommit=True) as conn:
        qty = conn.execute("SELECT qty FROM stock WHERE sku = 42").fetchone()[0]
    tap(results["sold"] == 30 and results["refused"] == 10 and not results["other"] and qty == 0,
        f"python: {workers} connections x 5 sales of the last 30 units: {results['sold']} sold,"
        f" {results['refused']} CK001, {len(results['other'])} other errors, {qty} left")
    for o in results["other"]:
        note(o)


def test_lock(dsn):
    with psycopg.connect(dsn, autocommit=True) as a, psycopg.connect(dsn, autocommit=True) as b:
        before = b.execute("SHOW lock_timeout").fetchone()[0]
        ran = []
        with a.transaction():
            a.execute("SELECT ck.xact_lock('relay', 7)")
            started = time.monotonic()
            try:
                relay(b, 7, lambda conn: ran.append(True))
                error = None
            except psycopg.Error as e:
                error = e
            waited = time.monotonic() - started
            tap(isinstance(error, psycopg.errors.LockNotAvailable) and not ran,
                f"python: connection B: psycopg.errors.LockNotAvailable (55P03) from"
                f" ck.xact_lock('relay', 7, '500 ms') ({error!r})")
            tap(0.45 <= waited < 3, f"python: ... after waiting about the timeout ({waited * 1000:.0f} ms)")
            tap(classify(b, error) == "busy", "python: ck.sqlstate_action classifies it as busy")
            one = b.execute("SELECT 1").fetchone()[0]
            after = b.execute("SHOW lock_timeout").fetchone()[0]
            tap(one == 1 and after == before,
                f"python: connection B is usable afterwards, its lock_timeout unchanged ({after!r}, was {before!r})")
        held = relay(b, 7, lambda conn: conn.execute(
            "SELECT count(*) FROM ck.held_locks() WHERE ns_name = 'relay' AND key = 7").fetchone()[0])
        tap(held == 1, f"python: once A committed, B takes the lock (held {held})")
        # Namespaces are created once, up front (setup.sql): a lock call never creates one, so a typo is an error.
        try:
            with b.transaction():
                b.execute("SELECT ck.xact_lock('relya', 7)")
            error = None
        except psycopg.Error as e:
            error = e
        hint = error.diag.message_hint if error is not None else None
        tap(sqlstate(error) == "42704" and hint is not None and '"relay"' in hint,
            f"python: a mistyped namespace ('relya') raises 42704, its HINT naming relay ({hint!r})")


def test_retry(dsn, workers):
    attempts, errors = {}, []

    def client(w):
        with psycopg.connect(dsn, autocommit=True) as conn:
            for i in range(1, 6):
                customer = f"py-{w}-{i}"
                try:
                    n = take_seat(conn, customer)
                    with stats_lock:
                        attempts[customer] = n
                except psycopg.Error as e:
                    with stats_lock:
                        errors.append(repr(e))

    run_threads(workers, client)
    calls, total = workers * 5, sum(attempts.values())
    tap(not errors and len(attempts) == calls,
        f"python: {calls} CALL ck.retry(...) from {workers} connections returned their attempts")
    for e in errors:
        note(e)
    with psycopg.connect(dsn, autocommit=True) as conn:
        seats = conn.execute("SELECT customer, attempt FROM seats WHERE show_id = 7").fetchall()
        tap(len(seats) == 20, f"python: exactly 20 seats taken ({len(seats)})")
        tap(total > calls, f"python: serialization failures were retried: {total} attempts for {calls} calls")
        mismatched = sum(1 for customer, attempt in seats if attempts.get(customer) != attempt)
        tap(mismatched == 0, f"python: each seat was taken by the attempt whose number CALL returned"
                             f" (ck.current_attempt), {mismatched} mismatches")
        try:
            with conn.transaction():
                conn.execute("CALL ck.retry('SELECT 1')")
            error = None
        except psycopg.Error as e:
            error = e
        tap(sqlstate(error) == "25001", f"python: CALL ck.retry inside a transaction is refused with 25001 ({error!r})")


def test_unique(dsn, workers):
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT ck.create_queue('reports') WHERE to_regclass('reports') IS NULL")
    got, errors = [], []

    def producer(i):
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                got.append(enqueue_once(conn, "report:2026-12", {"by": i}))
        except Exception as e:
            errors.append(f"producer {i}: {e!r}")

    run_threads(workers, producer)
    ids = {id for id, _ in got}
    tap(not errors and len(got) == workers and len(ids) == 1 and sum(1 for _, inserted in got if inserted) == 1,
        f"python: {workers} producers enqueue one unique key at once: one job inserted, every producer got its id")
    for e in errors:
        note(e)
    with psycopg.connect(dsn, autocommit=True) as conn:
        (id,) = ids or {None}
        tap(cancel(conn, id) == "cancelled" and cancel(conn, id) == "gone",
            "python: ck.cancel of the waiting job says 'cancelled', then 'gone'")
        id, inserted = enqueue_once(conn, "report:2026-12", {"by": "again"})
        claimed = conn.execute("SELECT id, lease_token FROM ck.claim('reports')").fetchone()
        tap(inserted and claimed is not None and claimed[0] == id,
            "python: the cancelled job's key is free again: a new job, claimed by a worker")
        outcome = cancel(conn, id)
        try:
            conn.execute("SELECT ck.complete('reports', %s, %s)", claimed)
            error = None
        except psycopg.Error as e:
            error = e
        held = conn.execute("SELECT ck.try_complete('reports', %s, %s)", claimed).fetchone()[0]
        tap(outcome == "cancelling" and sqlstate(error) == "CK005" and classify(conn, error) == "conflict"
            and held is False,
            f"python: cancelling the running job says 'cancelling'; its worker's ck.complete raises CK005, a conflict"
            f" ({error!r}), and ck.try_complete returns false")


def test_dependencies(dsn, workers):
    """A workflow drained by the workers (its order is checked in SQL by the caller), then a
    cancelled job that buries the jobs after it."""
    n = 100000

    def step(conn, name, kind, after):
        nonlocal n
        n += 1
        id = enqueue_after(conn, "jobs", {"n": n, "kind": kind}, after)
        conn.execute("INSERT INTO enqueued VALUES (%s, %s, %s)", (id, n, kind))
        conn.execute("INSERT INTO workflow VALUES (%s, %s, %s)", (id, name, after))
        return id

    # A fan-out and a fan-in in one transaction. The root is slow (2.5 s: time enough for idle
    # workers to take a job after it too early); of the 16 after it, one fails once, one is slow.
    with psycopg.connect(dsn, autocommit=True) as conn:
        with conn.transaction():
            root = step(conn, "root", "slow", [])
            fan_out = [step(conn, "fan-out", kind, [root]) for kind in ["flaky", "slow"] + ["plain"] * 14]
            step(conn, "fan-in", "plain", fan_out)
    drain(dsn, workers, "ran a workflow of 18 jobs (1, 16 after it, 1 after those)")

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT ck.create_queue('reports') WHERE to_regclass('reports') IS NULL")
        extract = enqueue_after(conn, "reports", {"step": "extract"}, [])
        load = enqueue_after(conn, "reports", {"step": "load"}, [extract])
        notify = enqueue_after(conn, "reports", {"step": "notify"}, [load])
        outcome = cancel(conn, extract)
        reasons = [dead_reason(conn, "reports", id) for id in (load, notify)]
        cancelled = f"dependency {extract} did not complete: cancelled"
        tap(outcome == "cancelled" and reasons == [cancelled, f"dependency {load} did not complete: {cancelled}"],
            f"python: ck.cancel of a job buries the job after it and the job after that, each with the reason"
            f" in reports_dead ({reasons!r})")


def test_optimistic(dsn, workers):
    used, errors = [], []

    def visit(row):
        time.sleep(0.005)  # widens the window between the read and the write, for the test
        return {"visits": row[0] + 1}

    def editor(i):
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                for _ in range(5):
                    used.append(edit_profile(conn, 1, visit, attempts=100)[1])
        except Exception as e:
            errors.append(f"editor {i}: {e!r}")

    run_threads(workers, editor)
    with psycopg.connect(dsn, autocommit=True) as conn:
        visits, version = conn.execute("SELECT visits, version FROM profiles WHERE id = 1").fetchone()
        edits = workers * 5
        tap(not errors and visits == edits and version == edits + 1,
            f"python: {workers} connections x 5 optimistic edits of one row: {visits} visits counted"
            f" (none lost), version {version}")
        for e in errors:
            note(e)
        tap(sum(used) > edits, f"python: stale writes (CK006) were read again and retried:"
                               f" {sum(used)} attempts for {edits} edits")

        # A writer that always gets in between: the loop gives up after its attempts, with CK006.
        other = psycopg.connect(dsn, autocommit=True)
        tries = []

        def raced(row):
            tries.append(row[2])
            other.execute("UPDATE profiles SET note = note || 'x', version = version + 1 WHERE id = 2")
            return {"note": "mine"}

        try:
            edit_profile(conn, 2, raced, attempts=3)
            error = None
        except psycopg.Error as e:
            error = e
        other.close()
        tap(sqlstate(error) == "CK006" and len(tries) == 3 and classify(conn, error) == "retry",
            f"python: always stale: 3 attempts, then CK006 raised ({error!r}), classified retry")
        try:
            edit_profile(conn, 1, lambda row: {"nope": 1})
            error = None
        except psycopg.Error as e:
            error = e
        tap(sqlstate(error) == "42703", f"python: another error is not retried: 42703 at once ({error!r})")


def test_prepare(dsn, tracked):
    """Through PgBouncer in transaction mode: psycopg prepares a statement on the server from its
    prepare_threshold-th execution (default 5); the next execution may land on another server
    connection, where that statement does not exist unless PgBouncer tracks prepared statements
    (tracked: 1.24 or later). prepare_threshold=None never prepares."""
    query = "SELECT pg_backend_pid(), ck.sqlstate_action(%s) = 'busy'"
    for threshold in (5, None):
        with psycopg.connect(dsn, autocommit=True, prepare_threshold=threshold) as c, \
                psycopg.connect(dsn, autocommit=True) as k:
            pids = [c.execute(query, ("55P03",)).fetchone()[0] for _ in range(6)]
            with k.transaction():  # k takes the server connection c used last
                held = k.execute("SELECT pg_backend_pid()").fetchone()[0]
                try:
                    pid = c.execute(query, ("55P03",)).fetchone()[0]
                    error = None
                except psycopg.Error as e:
                    pid, error = None, e
            if threshold is not None and tracked:
                tap(held == pids[-1] and error is None and pid != held,
                    f"pgbouncer: it tracks prepared statements, so psycopg's default prepare_threshold (5) works"
                    f" when the prepared statement's next use lands on another server connection"
                    f" (backends {held}, {pid})")
            elif threshold is not None:
                tap(held == pids[-1] and sqlstate(error) in ("26000", "42P05"),
                    f"pgbouncer: psycopg's default prepare_threshold (5) fails once the prepared statement's next"
                    f" use lands on another server connection ({error!r})")
            else:
                tap(held == pids[-1] and error is None and pid != held,
                    f"pgbouncer: with prepare_threshold=None the same statement runs on the next server connection"
                    f" (backends {held}, {pid})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dsn", default="")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--tracked-prepares", action="store_true",
                        help="PgBouncer tracks named prepared statements (1.24 or later)")
    parser.add_argument("parts", nargs="+")
    args = parser.parse_args()
    for part in args.parts:
        try:
            if part == "queue":
                test_queue(args.dsn, args.workers)
            elif part == "decrement":
                test_decrement(args.dsn, args.workers)
            elif part == "lock":
                test_lock(args.dsn)
            elif part == "retry":
                test_retry(args.dsn, args.workers)
            elif part == "unique":
                test_unique(args.dsn, args.workers)
            elif part == "dependencies":
                test_dependencies(args.dsn, args.workers)
            elif part == "optimistic":
                test_optimistic(args.dsn, args.workers)
            elif part == "prepare":
                test_prepare(args.dsn, args.tracked_prepares)
            else:
                tap(False, f"unknown part {part!r}")
        except Exception as e:
            tap(False, f"python: part {part} raised {e!r}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
