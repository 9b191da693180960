"""Backend faults (test/chaos/faults.py, part "backend").

A victim session makes one extension call that waits -- on a row lock, a table lock, an
advisory lock held by a blocker session, or on its latch (ck.claim_wait on an empty queue,
ck.retry between attempts) -- and is interrupted while it waits: pg_cancel_backend,
pg_terminate_backend, or its own statement_timeout. Then:

  - the call ended with the right error (57014 query_canceled; 57P01 and a closed connection
    for terminate), promptly after the interruption;
  - the session holds no advisory lock and no lock on the test tables (pg_locks);
  - lock_timeout and statement_timeout are what the session had set (the timed lock calls
    set lock_timeout for their wait only);
  - nothing was half done: the test tables, their constraints and the installed extensions
    are exactly as before;
  - the connection is usable (cancel, statement_timeout), or a new one is (terminate), and the
    same call succeeds once the blocker is gone (a claim_wait afterwards still wakes up for a
    job enqueued while it waits; a namespace whose registration was interrupted registers).

Besides: a timed lock that times out inside a PL/pgSQL exception block leaves lock_timeout as
it was in the same transaction, and one timeout bounds both waits of a timed lock by name
(for another session's registration of the name, then for the lock).

The SIGKILL of a backend (and the postmaster's restart of all of them) is in part "crash".
"""
import threading
import time

import psycopg

from faults_lib import connect, one, recreate_db, drop_db, wait_for

DB = "ck_chaos_backend"
SESSION_LOCK_TIMEOUT = "54321ms"     # distinctive, and longer than any wait here
STATEMENT_TIMEOUT = "300ms"
REACT_S = 5.0                        # an interrupted call must end within this after the interrupt (slow shared VMs)

SETUP = """
CREATE EXTENSION concurrency_kit;
CREATE TABLE stock (sku int PRIMARY KEY, qty int NOT NULL);
INSERT INTO stock SELECT g, 100 FROM generate_series(1, 3) AS g;
CREATE TABLE seats (id int PRIMARY KEY, state text NOT NULL DEFAULT 'free');
INSERT INTO seats SELECT g FROM generate_series(1, 3) AS g;
SELECT FROM ck.create_queue('empty_q', lease => '30 seconds');
SELECT FROM ck.create_queue('work_q', lease => '30 seconds', max_attempts => 100);
SELECT FROM ck.create_queue('unique_q');
INSERT INTO work_q (payload) SELECT jsonb_build_object('n', g) FROM generate_series(1, 200) AS g;
CREATE TABLE bookings (id int PRIMARY KEY, room int NOT NULL, during tstzrange);
INSERT INTO bookings SELECT g, g % 5, tstzrange('2026-01-01'::timestamptz + g * interval '1 day',
                                                '2026-01-01'::timestamptz + g * interval '1 day' + interval '2 hours')
FROM generate_series(1, 50) AS g;
CREATE TABLE marks (n int);
SELECT ck.lock_namespace('chaos');
ANALYZE;
"""

# Everything a half-done change could touch: the rows, the guard's constraints, the extensions.
FINGERPRINT = """
SELECT x FROM (
    SELECT 'stock ' || s::text FROM stock s
    UNION ALL SELECT 'seat ' || s::text FROM seats s
    UNION ALL SELECT 'job ' || (id, lease_token, attempts, run_at, last_error)::text FROM work_q
    UNION ALL SELECT 'empty_q rows ' || count(*) FROM empty_q
    UNION ALL SELECT 'unique job ' || (id, unique_key, lease_token)::text FROM unique_q
    UNION ALL SELECT 'dead ' || (SELECT count(*) FROM work_q_dead) + (SELECT count(*) FROM empty_q_dead)
    UNION ALL SELECT 'booking ' || b::text FROM bookings b
    UNION ALL SELECT 'mark ' || m::text FROM marks m
    UNION ALL SELECT 'constraint ' || conname FROM pg_constraint WHERE conrelid = 'bookings'::regclass
    UNION ALL SELECT 'column ' || attname || ' not null ' || attnotnull FROM pg_attribute
              WHERE attrelid = 'bookings'::regclass AND attnum > 0
    UNION ALL SELECT 'extension ' || extname FROM pg_extension
    UNION ALL SELECT 'namespaces ' || count(*) FROM ck.lock_namespaces
) AS t(x) ORDER BY x"""

# Locks a session still holds on the test tables, or advisory locks (pid given).
HELD = """
SELECT coalesce(string_agg(format('%%s %%s %%s', locktype, coalesce(relation::regclass::text, classid || ':' || objid), mode), ', '), '')
FROM pg_locks
WHERE pid = %s AND (locktype = 'advisory'
                    OR relation IN ('stock'::regclass, 'seats'::regclass, 'work_q'::regclass, 'empty_q'::regclass, 'unique_q'::regclass,
                                    'bookings'::regclass, 'marks'::regclass))"""


class Call(threading.Thread):
    """Runs one statement on conn in the background; records the error and when it ended."""

    def __init__(self, conn, sql, params=None):
        super().__init__(daemon=True)
        self.conn, self.sql, self.params = conn, sql, params
        self.error = None
        self.rows = None
        self.ended = None

    def run(self):
        try:
            cur = self.conn.execute(self.sql, self.params)
            self.rows = cur.fetchall() if cur.description else []
        except psycopg.Error as e:
            self.error = e
        self.ended = time.monotonic()


class Case:
    """One interrupted call.

    blocker: statements a second session runs in an open transaction before the call (it only
    locks, and rolls back at the end); prepare: statements the victim runs before (outside the
    fingerprint); call: the victim's statement, with its parameters computed by params(victim);
    waits: the wait_event_type values that show the call is waiting; in_block: the call runs
    inside BEGIN ... SAVEPOINT, with SET LOCAL lock_timeout; followup: a statement that must
    succeed afterwards (on the victim's connection, or a new one after terminate).
    """

    def __init__(self, family, what, call, waits, actions, blocker=(), prepare=None, in_block=False,
                 followup=None, params=None):
        self.family, self.what, self.call, self.waits, self.actions = family, what, call, waits, actions
        self.blocker, self.prepare, self.in_block, self.followup, self.params = blocker, prepare, in_block, followup, params


fresh_names = iter(range(1, 1_000_000))


def claim_wait_wakes_up(v, ctl):
    """Follow-up of the claim_wait cases: a claim_wait on the same (or a new) connection waits, and
    returns the job another session enqueues within moments."""
    call = Call(v.conn, "SELECT id, lease_token FROM ck.claim_wait('empty_q', 1, '30 seconds', '20 seconds')")
    call.start()
    if not wait_for(lambda: one(ctl, "SELECT wait_event_type IN ('Extension', 'IPC') FROM pg_stat_activity WHERE pid = %s",
                                (v.pid,)), 10, 0.01):
        call.join(25)
        return [f"the follow-up claim_wait was never seen waiting (it ended with {call.error!r} {call.rows!r})"]
    enqueued = time.monotonic()
    job = one(ctl, "SELECT ck.enqueue('empty_q')")
    call.join(25)
    problems = []
    if call.is_alive() or call.error is not None or not call.rows or call.rows[0][0] != job:
        problems.append(f"the follow-up claim_wait did not return the job enqueued: {call.error!r} {call.rows!r}")
    elif call.ended - enqueued > REACT_S:
        problems.append(f"the follow-up claim_wait returned the job {call.ended - enqueued:.2f}s after it was enqueued")
    if call.rows:
        if not one(v.conn, "SELECT ck.try_complete('empty_q', %s, %s)", call.rows[0]):
            problems.append("the follow-up could not complete the job it claimed")
    return problems


def namespace_registers(v, ctl):
    """Follow-up of the registration case: the name registers now, a lock call takes it, and this
    backend's answer agrees with the table."""
    try:
        mine = one(v.conn, "SELECT ck.lock_namespace(%s)", (v.ns,))
        v.conn.execute("SELECT ck.xact_lock(%s, 1, '2 seconds')", (v.ns,))
    except psycopg.Error as e:
        return [f"the follow-up lock failed: {e.sqlstate}: {str(e).strip()}"]
    stored = one(ctl, "SELECT id FROM ck.lock_namespaces WHERE name = %s", (v.ns,))
    return [] if mine == stored and mine is not None else [f"the name maps to {mine} here, {stored} in the table"]


def registering(v):
    """Blocker of the registration cases: registers a new name and keeps its transaction open."""
    v.ns = f"fresh-{next(fresh_names)}"
    return [("SELECT ck.lock_namespace(%s)", (v.ns,))]


def unique_key_taken_by_blocker(v):
    """Blocker of the unique-key case: enqueues a job with a new key and keeps its transaction open."""
    v.ns = f"key-{next(fresh_names)}"
    return [("SELECT ck.enqueue('unique_q', unique_key => %s)", (v.ns,))]


def unique_key_still_free(v, ctl):
    """Follow-up of the unique-key case: the holder rolled back and the interrupted enqueue left
    nothing, so the key is free: this enqueue inserts, the next one finds its job."""
    try:
        first = v.conn.execute("SELECT id, inserted FROM ck.enqueue_unique('unique_q', %s, '{}')", (v.ns,)).fetchone()
        again = v.conn.execute("SELECT id, inserted FROM ck.enqueue_unique('unique_q', %s, '{}')", (v.ns,)).fetchone()
    except psycopg.Error as e:
        return [f"the follow-up enqueue failed: {e.sqlstate}: {str(e).strip()}"]
    if not first[1] or again != (first[0], False):
        return [f"the key was not free after the interrupted enqueue: {first!r} then {again!r}"]
    v.conn.execute("DELETE FROM unique_q WHERE unique_key = %s", (v.ns,))
    return []


def cases():
    lock_wait = ("Lock",)
    latch_wait = ("Extension", "IPC")
    all3 = ("cancel", "terminate", "statement_timeout")
    claim_job = "SELECT id, lease_token FROM ck.claim('work_q') ORDER BY id LIMIT 1"

    def job_params(v):
        return v.job

    def row_locker(v):
        return [("SELECT FROM work_q WHERE id = %s FOR UPDATE", (v.job[0],))]

    return [
        Case("queue", "ck.claim_wait on an empty queue (max_wait 30 s)",
             "SELECT * FROM ck.claim_wait('empty_q', 1, '30 seconds', '30 seconds')", latch_wait, all3,
             followup=claim_wait_wakes_up),
        Case("queue", "ck.claim_wait on an empty queue inside BEGIN, SET LOCAL lock_timeout, SAVEPOINT",
             "SELECT * FROM ck.claim_wait('empty_q', 1, '30 seconds', '30 seconds')", latch_wait, ("cancel",),
             in_block=True, followup=claim_wait_wakes_up),
        Case("advisory lock", "a timed ck.xact_lock('chaos', 1, '30 s') blocked by another session",
             "SELECT ck.xact_lock('chaos', 1, '30 seconds')", lock_wait, all3,
             blocker=["SELECT ck.xact_lock('chaos', 1)"],
             followup="SELECT ck.xact_lock('chaos', 1, '2 seconds')"),
        Case("advisory lock", "a timed ck.xact_lock inside BEGIN, SET LOCAL lock_timeout, SAVEPOINT",
             "SELECT ck.xact_lock('chaos', 1, '30 seconds')", lock_wait, ("cancel", "statement_timeout"),
             blocker=["SELECT ck.xact_lock('chaos', 1)"], in_block=True,
             followup="SELECT ck.xact_lock('chaos', 1, '2 seconds')"),
        Case("advisory lock", "ck.lock_namespace(name) of a new name another session is registering",
             "SELECT ck.lock_namespace(%s)", lock_wait, all3,
             blocker=registering, params=lambda v: (v.ns,), followup=namespace_registers),
        Case("advisory lock", "a timed ck.session_lock('chaos', 4, '30 s') blocked by another session",
             "SELECT ck.session_lock('chaos', 4, '30 seconds')", lock_wait, all3,
             blocker=["SELECT pg_advisory_xact_lock(ck.lock_namespace('chaos'), 4)"],
             followup="SELECT ck.session_lock('chaos', 4, '2 seconds'), ck.session_unlock('chaos', 4)"),
        Case("retry", "CALL ck.retry of statements that insert a row, then wait for an advisory lock",
             "CALL ck.retry($$INSERT INTO marks VALUES (1); SELECT ck.xact_lock('chaos', 2)$$, 'read committed', 3)",
             lock_wait, all3, blocker=["SELECT ck.xact_lock('chaos', 2)"],
             followup="CALL ck.retry($$SELECT ck.xact_lock('chaos', 2, '2 seconds')$$, 'read committed', 3)"),
        Case("retry", "CALL ck.retry sleeping between attempts of statements that always fail with 40001",
             "CALL ck.retry($$INSERT INTO marks VALUES (2); "
             "DO 'BEGIN RAISE SQLSTATE ''40001'' USING MESSAGE = ''chaos: always a conflict''; END'$$, "
             "'serializable', 1000)",
             latch_wait, all3, followup="CALL ck.retry('SELECT 1')"),
        Case("conditional change", "ck.try_decrement of a row locked by another session",
             "SELECT ck.try_decrement('stock', 1, 'qty', 1)", lock_wait, ("statement_timeout", "cancel"),
             blocker=["SELECT FROM stock WHERE sku = 1 FOR UPDATE"],
             followup="SELECT ck.try_decrement('stock', 2, 'qty', 1)"),
        Case("conditional change", "ck.decrement of a row locked by another session",
             "SELECT ck.decrement('stock', 1, 'qty', 1)", lock_wait, ("statement_timeout",),
             blocker=["SELECT FROM stock WHERE sku = 1 FOR UPDATE"]),
        Case("conditional change", "ck.try_increment of a row locked by another session",
             "SELECT ck.try_increment('stock', 1, 'qty', 1, 1000)", lock_wait, ("statement_timeout",),
             blocker=["SELECT FROM stock WHERE sku = 1 FOR UPDATE"]),
        Case("conditional change", "ck.transition of a row locked by another session",
             "SELECT ck.try_transition('seats', 1, 'state', 'free', 'booked')", lock_wait, ("statement_timeout", "terminate"),
             blocker=["SELECT FROM seats WHERE id = 1 FOR UPDATE"],
             followup="SELECT ck.try_transition('seats', 2, 'state', 'free', 'booked')"),
        Case("conditional change", "ck.update_if_version of a row locked by another session",
             # the version read first: an UPDATE waits only for a row its WHERE matches
             "SELECT ck.try_update_if_version('stock', 1, (SELECT qty FROM stock WHERE sku = 1), '{}', 'qty')",
             lock_wait, ("statement_timeout", "cancel"), blocker=["SELECT FROM stock WHERE sku = 1 FOR UPDATE"],
             followup="SELECT ck.try_update_if_version('stock', 2, (SELECT qty FROM stock WHERE sku = 2), '{}', 'qty')"),
        Case("row locks", "ck.lock_rows of rows one of which another session has locked",
             "SELECT ck.lock_rows('stock', ARRAY[2, 1])", lock_wait, ("statement_timeout", "terminate"),
             blocker=["SELECT FROM stock WHERE sku = 1 FOR UPDATE"],
             followup="SELECT ck.lock_rows('stock', ARRAY[2])"),
        Case("queue", "ck.claim of a queue another session has locked (LOCK TABLE)",
             "SELECT * FROM ck.claim('work_q')", lock_wait, ("statement_timeout", "cancel"),
             blocker=["LOCK TABLE work_q IN ACCESS EXCLUSIVE MODE"]),
        Case("queue", "ck.fail of a job whose row another session has locked",
             "SELECT ck.fail('work_q', %s, %s, 'chaos')", lock_wait, ("statement_timeout", "terminate"),
             blocker=row_locker, prepare=claim_job, params=job_params,
             followup="SELECT ck.complete('work_q', %s, %s)"),
        Case("queue", "ck.complete of a job whose row another session has locked",
             "SELECT ck.complete('work_q', %s, %s)", lock_wait, ("statement_timeout",),
             blocker=row_locker, prepare=claim_job, params=job_params,
             followup="SELECT ck.complete('work_q', %s, %s)"),
        Case("queue", "ck.extend_lease of a job whose row another session has locked",
             "SELECT ck.extend_lease('work_q', %s, %s, '1 minute')", lock_wait, ("statement_timeout",),
             blocker=row_locker, prepare=claim_job, params=job_params,
             followup="SELECT ck.complete('work_q', %s, %s)"),
        Case("queue", "ck.complete_and_claim of a job whose row another session has locked",
             "SELECT * FROM ck.complete_and_claim('work_q', %s, %s)", lock_wait, ("statement_timeout",),
             blocker=row_locker, prepare=claim_job, params=job_params,
             followup="SELECT ck.complete('work_q', %s, %s)"),
        Case("queue", "ck.enqueue_unique of a key another session is enqueuing (its transaction open)",
             "SELECT * FROM ck.enqueue_unique('unique_q', %s, '{}')", lock_wait, all3,
             blocker=unique_key_taken_by_blocker, params=lambda v: (v.ns,), followup=unique_key_still_free),
        Case("queue", "ck.cancel of a running job whose row another session has locked",
             "SELECT ck.cancel('work_q', %s), %s::bigint", lock_wait, ("statement_timeout", "cancel", "terminate"),
             blocker=row_locker, prepare=claim_job, params=job_params,
             followup="SELECT ck.complete('work_q', %s, %s)"),
        # Dependencies: the enqueue locks the job it waits for; a completion counts its dependant down.
        Case("queue", "ck.enqueue after a job whose row another session has locked",
             "SELECT ck.enqueue('work_q', after => ARRAY[%s]), %s::bigint", lock_wait, all3,
             blocker=row_locker, prepare=claim_job, params=job_params,
             followup="SELECT ck.complete('work_q', %s, %s)"),
        Case("queue", "ck.complete of a job whose dependant another session has locked",
             "SELECT ck.complete('work_q', %s, %s)", lock_wait, all3,
             blocker=lambda v: [("SELECT FROM work_q WHERE id = %s FOR UPDATE", (v.job[2],))],
             prepare="WITH c AS (SELECT id, lease_token FROM ck.claim('work_q') ORDER BY id LIMIT 1) "
                     "SELECT c.id, c.lease_token, ck.enqueue('work_q', after => ARRAY[c.id]) FROM c",
             params=lambda v: v.job[:2], followup="SELECT ck.complete('work_q', %s, %s)"),
        Case("advisory lock", "ck.xact_lock('chaos', 3) without timeout, blocked by another session",
             "SELECT ck.xact_lock('chaos', 3)", lock_wait, ("statement_timeout", "cancel"),
             blocker=["SELECT ck.xact_lock('chaos', 3)"]),
        Case("advisory lock", "ck.xact_lock by number without timeout, blocked by another session",
             "SELECT ck.xact_lock(ck.lock_namespace('chaos'), 5)", lock_wait, ("statement_timeout",),
             blocker=["SELECT pg_advisory_xact_lock(ck.lock_namespace('chaos'), 5)"]),
        Case("advisory lock", "ck.session_lock('chaos', 6) without timeout, blocked by another session",
             "SELECT ck.session_lock('chaos', 6)", lock_wait, ("statement_timeout",),
             blocker=["SELECT ck.xact_lock('chaos', 6)"]),
        Case("guards", "ck.add_overlap_guard waiting for its ALTER TABLE lock (another session reads the table)",
             "SELECT ck.add_overlap_guard('bookings', 'during', '{room}')", lock_wait, ("statement_timeout", "cancel"),
             blocker=["SELECT count(*) FROM bookings"]),
    ]


class Victim:
    def __init__(self, name):
        self.conn = connect(DB, application_name=name)
        self.pid = self.conn.info.backend_pid
        self.job = None      # (id, lease_token) of a job the victim claimed (prepare)
        self.ns = None       # a namespace name no one has registered yet


def run_case(ctl, case, action, rnd):
    """Runs one case with one action; returns (problems, note)."""
    problems = []
    v = Victim(f"chaos-victim-{rnd}")
    blocker = None
    note = ""
    try:
        v.conn.execute(f"SET lock_timeout = '{SESSION_LOCK_TIMEOUT}'")
        if case.prepare:
            v.job = v.conn.execute(case.prepare).fetchone()
        before = [r[0] for r in ctl.execute(FINGERPRINT).fetchall()]
        statements = case.blocker(v) if callable(case.blocker) else [(s, None) for s in case.blocker]
        if statements:
            blocker = connect(DB, application_name="chaos-blocker")
            blocker.execute("BEGIN")
            for sql, params in statements:
                blocker.execute(sql, params)
        statement_timeout = "0"
        if action == "statement_timeout":
            statement_timeout = STATEMENT_TIMEOUT
            v.conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
        if case.in_block:
            v.conn.execute("BEGIN")
            v.conn.execute("SET LOCAL lock_timeout = '1234ms'")
            v.conn.execute("SAVEPOINT before_call")
        params = case.params(v) if case.params else None
        call = Call(v.conn, case.call, params)
        started = time.monotonic()
        call.start()

        def waiting():
            row = ctl.execute("SELECT state, wait_event_type FROM pg_stat_activity WHERE pid = %s", (v.pid,)).fetchone()
            return row is not None and row[0] == "active" and row[1] in case.waits
        seen = wait_for(waiting, 10, 0.01)
        if not seen and action != "statement_timeout":
            problems.append(f"the call was never seen waiting ({'/'.join(case.waits)}) within 10 s"
                            + (f"; it ended with {call.error!r}" if call.ended else ""))
        interrupted = time.monotonic()
        if action == "cancel":
            if not one(ctl, "SELECT pg_cancel_backend(%s)", (v.pid,)):
                problems.append("pg_cancel_backend returned false")
        elif action == "terminate":
            if not one(ctl, "SELECT pg_terminate_backend(%s)", (v.pid,)):
                problems.append("pg_terminate_backend returned false")
        else:
            interrupted = started
        call.join(30)
        if call.is_alive():
            problems.append("the call was still running 30 s after the interruption: terminated")
            ctl.execute("SELECT pg_terminate_backend(%s)", (v.pid,))
            call.join(10)
            return problems, note
        took = call.ended - interrupted
        bound = REACT_S + (0.3 if action == "statement_timeout" else 0)
        note = f"{took:.2f}s"
        if took > bound:
            problems.append(f"the call ended {took:.2f}s after the {action} (bound {bound}s)")
        e = call.error
        if action in ("cancel", "statement_timeout"):
            want = "user request" if action == "cancel" else "statement timeout"
            if e is None or e.sqlstate != "57014" or want not in str(e):
                problems.append(f"expected 57014 ({want}), got {e.sqlstate if e else 'success'}: {str(e).strip() if e else ''}")
            if case.in_block:
                v.conn.execute("ROLLBACK TO SAVEPOINT before_call")
                lt = one(v.conn, "SHOW lock_timeout")
                if lt != "1234ms":
                    problems.append(f"after ROLLBACK TO SAVEPOINT, lock_timeout is {lt}, not the SET LOCAL 1234ms")
                held = one(v.conn, "SELECT count(*) FROM ck.held_locks()")
                if held:
                    problems.append(f"ck.held_locks() lists {held} locks after ROLLBACK TO SAVEPOINT")
                v.conn.execute("ROLLBACK")
            status = v.conn.info.transaction_status
            if status != psycopg.pq.TransactionStatus.IDLE:
                problems.append(f"the connection is not idle after the error: {status.name}")
                v.conn.execute("ROLLBACK")
            lt, st = one(v.conn, "SHOW lock_timeout"), one(v.conn, "SHOW statement_timeout")
            if lt != SESSION_LOCK_TIMEOUT:
                problems.append(f"lock_timeout is {lt}, not the session's {SESSION_LOCK_TIMEOUT}")
            if st != statement_timeout:
                problems.append(f"statement_timeout is {st}, not the session's {statement_timeout}")
            attempt = one(v.conn, "SELECT ck.current_attempt()")
            if attempt != 0:
                problems.append(f"ck.current_attempt() is {attempt} after the call, not 0")
            held = one(ctl, HELD, (v.pid,))
            if held:
                problems.append(f"the session still holds: {held}")
            if one(v.conn, "SELECT 1") != 1:
                problems.append("the connection does not answer SELECT 1")
        else:
            if e is None or not (v.conn.closed or v.conn.broken):
                problems.append(f"expected the connection to be closed, got {e!r}")
            elif e.sqlstate not in (None, "57P01"):
                problems.append(f"expected 57P01 admin_shutdown, got {e.sqlstate}: {str(e).strip()}")
            gone = wait_for(lambda: one(ctl, "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = %s", (v.pid,)), 10)
            if not gone:
                problems.append("the terminated backend was still there 10 s later")
            held = one(ctl, HELD, (v.pid,))
            if held:
                problems.append(f"the terminated backend's locks remain: {held}")
        if blocker is not None:
            # The blocker's own locks are untouched by the victim's fate.
            if not one(blocker, "SELECT count(*) = count(*) FILTER (WHERE granted) FROM pg_locks WHERE pid = pg_backend_pid()"):
                problems.append("the blocker lost or waits for a lock")
            blocker.execute("ROLLBACK")
            blocker.close()
            blocker = None
        after = [r[0] for r in ctl.execute(FINGERPRINT).fetchall()]
        if after != before:
            gone_rows = sorted(set(before) - set(after))[:5]
            new_rows = sorted(set(after) - set(before))[:5]
            problems.append(f"half-done change: rows before and not after {gone_rows}, after and not before {new_rows}")
        if action == "terminate":
            v.conn.close()
            job, ns = v.job, v.ns
            v = Victim(f"chaos-victim-{rnd}-new")
            v.job, v.ns = job, ns
            if one(v.conn, "SELECT 1") != 1:
                problems.append("a new connection does not answer SELECT 1")
        if callable(case.followup):
            problems += case.followup(v, ctl)
        elif case.followup:
            try:
                v.conn.execute(case.followup, case.params(v) if "%s" in case.followup else None)
            except psycopg.Error as e:
                problems.append(f"the follow-up call failed: {e.sqlstate}: {str(e).strip()}")
        if not v.conn.closed:
            v.conn.execute("SELECT ck.session_unlock_all()")
    finally:
        if blocker is not None:
            blocker.close()
        v.conn.close()
    return problems, note


def timeout_never_leaks(ctl):
    """A timed lock that times out (55P03) inside a PL/pgSQL exception block: lock_timeout is back
    right after the call, within the same transaction."""
    problems = []
    blocker = connect(DB, application_name="chaos-blocker")
    blocker.execute("BEGIN")
    blocker.execute("SELECT ck.xact_lock('chaos', 7)")
    with connect(DB, application_name="chaos-victim") as v:
        v.execute(f"SET lock_timeout = '{SESSION_LOCK_TIMEOUT}'")
        try:
            v.execute("""
                DO $$
                BEGIN
                    BEGIN
                        PERFORM ck.xact_lock('chaos', 7, '0.2 seconds');
                        RAISE 'the lock was granted';
                    EXCEPTION WHEN lock_not_available THEN
                        NULL;
                    END;
                    IF current_setting('lock_timeout') <> '54321ms' THEN
                        RAISE 'lock_timeout leaked into the transaction: %', current_setting('lock_timeout');
                    END IF;
                END
                $$""")
            got = one(v, "SHOW lock_timeout")
            if got != SESSION_LOCK_TIMEOUT:
                problems.append(f"lock_timeout after the block: {got}")
        except psycopg.Error as e:
            problems.append(f"{e.sqlstate}: {str(e).strip()}")
    blocker.execute("ROLLBACK")
    blocker.close()
    return problems


def lock_never_waits_for_a_registration(ctl):
    """A timed ck.xact_lock by a name another session is creating (uncommitted) does not wait for
    that transaction: lock calls only look names up, so it fails at once with 42704, and
    lock_timeout is left as it was."""
    problems = []
    name = f"fresh-{next(fresh_names)}"
    registrar = connect(DB, application_name="chaos-blocker")
    v = Victim("chaos-victim")
    try:
        registrar.execute("BEGIN")
        one(registrar, "SELECT ck.lock_namespace(%s)", (name,))
        call = Call(v.conn, "SELECT ck.xact_lock(%s, 1, '3 seconds')", (name,))
        started = time.monotonic()
        call.start()
        call.join(20)
        took = (call.ended or time.monotonic()) - started
        e = call.error
        if call.is_alive() or e is None or e.sqlstate != "42704":
            problems.append(f"expected 42704 at once, got {e.sqlstate if e else call.rows}: {str(e).strip() if e else ''}")
        if took > 1:
            problems.append(f"the call took {took:.2f}s: it waited for the registration")
        if one(v.conn, "SHOW lock_timeout") != "0":
            problems.append("lock_timeout leaked")
        return problems, took
    finally:
        registrar.close()
        v.conn.close()


def run(tap, server, mode):
    rounds = 3 if mode == "full" else 1
    recreate_db(DB)
    calls = 0
    with connect(DB, application_name="chaos-control") as ctl:
        ctl.execute(SETUP)
        tap.comment(f"backend faults: {len(cases())} waiting calls, each interrupted by cancel, terminate and/or "
                    f"statement_timeout ({STATEMENT_TIMEOUT}), {rounds} round(s)")
        counts = {"cancel": 0, "terminate": 0, "statement_timeout": 0}
        for case in cases():
            for action in case.actions:
                problems = []
                notes = []
                for rnd in range(1, rounds + 1):
                    p, note = run_case(ctl, case, action, rnd)
                    problems += [f"round {rnd}: {x}" for x in p]
                    notes.append(note)
                    counts[action] += 1
                    calls += 2 if case.followup else 1
                verb = {"cancel": "pg_cancel_backend", "terminate": "pg_terminate_backend",
                        "statement_timeout": f"statement_timeout {STATEMENT_TIMEOUT}"}[action]
                after = "a new connection works" if action == "terminate" else \
                    "no lock held, lock_timeout and statement_timeout as set, connection usable"
                tap.ok(not problems, f"{case.family}: {verb} during {case.what}: ended in {', '.join(notes)}; "
                                     f"nothing half done, {after}", "\n".join(problems[:8]))
        p = timeout_never_leaks(ctl)
        calls += 1
        tap.ok(not p, "advisory lock: a timed ck.xact_lock that times out inside a PL/pgSQL exception block "
                      "leaves lock_timeout as it was, in the same transaction", "\n".join(p))
        p, took = lock_never_waits_for_a_registration(ctl)
        calls += 1
        tap.ok(not p, f"advisory lock: a timed ck.xact_lock by a name another session is creating fails with 42704 "
                      f"after {took:.2f}s, without waiting for that session", "\n".join(p))
        left_sql = """SELECT string_agg(format('%s (%s): %s', application_name, state, left(query, 60)), '; ')
                      FROM pg_stat_activity
                      WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name LIKE 'chaos-%'"""
        # A closed connection's backend takes a moment to exit.
        wait_for(lambda: one(ctl, left_sql) is None, 10, 0.05)
        leftovers = one(ctl, left_sql)
        tap.ok(leftovers is None, "no victim or blocker session left behind", leftovers)
    tap.figure("backend: cancel / terminate / statement_timeout",
               f"{counts['cancel']} / {counts['terminate']} / {counts['statement_timeout']}")
    tap.figure("backend: calls checked", calls)
    tap.calls += calls
    if tap.failed == 0 and not __import__("os").environ.get("CK_FAULTS_KEEP"):
        drop_db(DB)
