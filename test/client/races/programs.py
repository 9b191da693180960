"""The race programs in Python (psycopg 3): the guide's examples written naively and written
correctly, run by test/client/race_programs.sh against test/client/races/setup.sql.

    /usr/bin/python3 programs.py PROGRAM CLIENTS TRANSACTIONS

Each of CLIENTS connections sets ck.race_detector = 'warning' and runs TRANSACTIONS transactions
of PROGRAM; the output is one line: "transactions=N reports=M errors=E", where reports counts the
warnings with SQLSTATE CK008 the clients received and errors the transactions that failed
(serialization failures and deadlocks of the correct programs are retried, not counted).
"""
import sys
import threading

import psycopg

NAIVE = ("stock", "seats", "transfer", "optimistic")
CORRECT = ("atomic", "locked", "try_decrement", "if_version", "serializable")


def stock(conn):
    # Read the stock, decide in the application, write the value computed there.
    with conn.transaction():
        (qty,) = conn.execute("SELECT qty FROM stock WHERE id = 1").fetchone()
        if qty > 0:
            conn.execute("UPDATE stock SET qty = %s WHERE id = 1", (qty - 1,))


def seats(conn):
    with conn.transaction():
        (left,) = conn.execute("SELECT seats_left FROM shows WHERE id = 1").fetchone()
        if left > 0:
            conn.execute("UPDATE shows SET seats_left = %s WHERE id = 1", (left - 1,))
            conn.execute("INSERT INTO tickets (show_id) VALUES (1)")


def transfer(conn):
    with conn.transaction():
        (a,) = conn.execute("SELECT balance FROM accounts WHERE id = 1").fetchone()
        (b,) = conn.execute("SELECT balance FROM accounts WHERE id = 2").fetchone()
        if a >= 1:
            conn.execute("UPDATE accounts SET balance = %s WHERE id = 1", (a - 1,))
            conn.execute("UPDATE accounts SET balance = %s WHERE id = 2", (b + 1,))


def optimistic(conn):
    # "Optimistic", but the version read is only written back, never checked.
    with conn.transaction():
        body, version = conn.execute("SELECT body, version FROM docs WHERE id = 1").fetchone()
        conn.execute("UPDATE docs SET body = %s, version = %s WHERE id = 1", (body[-20:] + "x", version + 1))


def atomic(conn):
    conn.execute("UPDATE stock SET qty = qty - 1 WHERE id = 1 AND qty > 0")


def locked(conn):
    with conn.transaction():
        (qty,) = conn.execute("SELECT qty FROM stock WHERE id = 1 FOR NO KEY UPDATE").fetchone()
        if qty > 0:
            conn.execute("UPDATE stock SET qty = %s WHERE id = 1", (qty - 1,))


def try_decrement(conn):
    conn.execute("SELECT ck.try_decrement('stock', 1, 'qty')")


def if_version(conn):
    while True:
        with conn.transaction():
            body, version = conn.execute("SELECT body, version FROM docs WHERE id = 1").fetchone()
            (new_version,) = conn.execute(
                "SELECT ck.try_update_if_version('docs', 1, %s, jsonb_build_object('body', %s::text))",
                (version, body[-20:] + "x")).fetchone()
        if new_version is not None:   # NULL: the row changed since the read; read again
            return


def serializable(conn):
    conn.execute("CALL ck.retry('SELECT transfer(1, 2, 1)', 'serializable', 100)")


def client(program, transactions, totals, lock):
    reports = errors = 0

    def on_notice(diag):
        nonlocal reports
        if diag.sqlstate == "CK008":
            reports += 1

    with psycopg.connect("", autocommit=True) as conn:
        conn.add_notice_handler(on_notice)
        conn.execute("SET ck.race_detector = 'warning'")
        run = globals()[program]
        for _ in range(transactions):
            try:
                run(conn)
            except psycopg.Error:
                errors += 1
    with lock:
        totals[0] += transactions
        totals[1] += reports
        totals[2] += errors


def main():
    program, clients, transactions = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if program not in NAIVE + CORRECT:
        sys.exit("unknown program " + program)
    totals, lock = [0, 0, 0], threading.Lock()
    threads = [threading.Thread(target=client, args=(program, transactions, totals, lock)) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("transactions=%d reports=%d errors=%d" % tuple(totals), flush=True)


main()
