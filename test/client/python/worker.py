"""A concurrency_kit worker in Python (psycopg 3): 4 threads take jobs from queue "emails" and
record each in table "sent" in the transaction that completes it (with a result). It connects with
the PG* environment variables and stops once the queue is empty.   Run: python3 worker.py
A producer that waits for its job's result:   python3 worker.py send bob@example.com"""
import sys
from concurrent.futures import ThreadPoolExecutor

import psycopg
from psycopg.types.json import Jsonb


def connect():
    # prepare_threshold=None: no prepared statements, so it also runs behind PgBouncer in
    # transaction pooling mode (by default psycopg prepares a statement on its 5th run).
    return psycopg.connect(autocommit=True, prepare_threshold=None)


def send(email):
    """The job's work (here only a check); returns its result. An exception hands the job back."""
    if "@" not in email["to"]:
        raise ValueError(f"bad address {email['to']!r}")
    return {"delivered_to": email["to"]}


def work():
    sent = 0
    with connect() as conn:
        while True:
            job = conn.execute("SELECT id, lease_token, attempts, payload"
                               " FROM ck.claim_wait('emails', max_wait => '1 second')").fetchone()
            if job is None:  # nothing ready for 1 s (or paused): stop if the queue is empty
                if conn.execute("SELECT NOT EXISTS (SELECT FROM emails)").fetchone()[0]:
                    return sent
                continue
            id, token, attempts, email = job
            try:
                result = send(email)
            except Exception as e:  # 'retry' after a backoff, 'dead' after max_attempts, NULL if lost
                conn.execute("SELECT ck.try_fail('emails', %s, %s, %s)", (id, token, str(e)))
                continue
            try:  # the effect and the acknowledgement (with the result) commit together, or not at all
                with conn.transaction():
                    conn.execute("INSERT INTO sent (job_id, recipient, attempts) VALUES (%s, %s, %s)",
                                 (id, email["to"], attempts))
                    conn.execute("SELECT ck.complete('emails', %s, %s, %s)", (id, token, Jsonb(result)))
                sent += 1
            except psycopg.Error as e:
                if e.sqlstate != "CK005":  # CK005: lease lost, the job's new holder records it
                    raise


def request(to):
    """A producer: enqueues an email and waits (up to 30 s) until a worker has finished it."""
    with connect() as conn:
        id = conn.execute("SELECT ck.enqueue('emails', %s)", (Jsonb({"to": to}),)).fetchone()[0]
        state, result, error = conn.execute("SELECT state, result, error FROM ck.await_job('emails', %s, '30 seconds')",
                                            (id,)).fetchone()
    print(f"job {id}: {state}", f"delivered to {result['delivered_to']}" if state == "completed" else error)


if __name__ == "__main__":
    if sys.argv[1:2] == ["send"]:  # a producer, not the workers
        request(sys.argv[2])
        sys.exit()
    with connect() as conn:  # set-up, once, before the workers start
        conn.execute("CREATE TABLE IF NOT EXISTS sent (job_id bigint PRIMARY KEY, recipient text NOT NULL,"
                     " attempts int NOT NULL, sent_at timestamptz NOT NULL DEFAULT now())")
        conn.execute("SELECT ck.create_queue('emails') WHERE to_regclass('emails') IS NULL")
        # Keep finished jobs, with their results, 7 days (run ck.maintain_history('emails') hourly).
        conn.execute("SELECT ck.set_history('emails', '7 days') WHERE to_regclass('emails_history') IS NULL")
    with ThreadPoolExecutor(4) as threads:
        workers = [threads.submit(work) for _ in range(4)]
        for w, done in enumerate(workers, 1):
            print(f"worker {w}: {done.result()} sent")  # result() raises what the worker raised
