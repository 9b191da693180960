"""Shared pieces of test/chaos/faults.py: TAP output, connections, the throwaway server's control
(immediate stop, start, SIGKILL of a backend) and its log, and bounded waits.

Connections follow libpq's environment (PGHOST, PGPORT, PGUSER), as test/cluster.sh env sets it.
"""
import os
import pwd
import shutil
import subprocess
import sys
import time

import psycopg


class Tap:
    """Numbered TAP lines, '#' comments, and the figures for the report at the end."""

    def __init__(self):
        self.n = 0
        self.failed = 0
        self.figures = []   # (label, value) for the closing report
        self.calls = 0      # extension calls made and checked, all parts

    def ok(self, passed, description, diagnostics=None):
        self.n += 1
        if passed:
            print(f"ok {self.n} - {description}", flush=True)
        else:
            self.failed += 1
            print(f"not ok {self.n} - {description}", flush=True)
        if diagnostics and not passed:
            self.comment(diagnostics)
        return passed

    def comment(self, text):
        for line in str(text).splitlines() or [""]:
            print(f"# {line}", flush=True)

    def figure(self, label, value):
        self.figures.append((label, value))

    def plan(self):
        print(f"1..{self.n}", flush=True)


def connect(dbname, application_name="chaos", **kwargs):
    """An autocommit connection; short connect timeout so that a dead server fails fast. The race
    detector is on ('log') in every chaos session: crashes, faults and long runs meet it too."""
    kwargs.setdefault("options", "-c ck.race_detector=log")
    return psycopg.connect(dbname=dbname, autocommit=True, connect_timeout=3,
                           application_name=application_name, **kwargs)


def one(conn, sql, params=None):
    """The first column of the first row (None when no row)."""
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def wait_for(condition, timeout, interval=0.02):
    """Calls condition() until it returns a true value or timeout seconds pass; returns its last value.
    Exceptions from condition count as false (the server may be restarting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except (psycopg.Error, OSError):
            value = None
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


class Server:
    """The cluster test/cluster.sh started: its data directory, log and pg_ctl."""

    def __init__(self, admin_db="postgres"):
        self.admin_db = admin_db
        with connect(admin_db) as c:
            self.data = one(c, "SHOW data_directory")
            self.version = one(c, "SHOW server_version")
        self.log = os.environ.get("CK_SERVER_LOG") or os.path.join(self.data, "server.log")
        bindir = None
        pg_config = os.environ.get("PG_CONFIG")
        if pg_config and os.access(pg_config, os.X_OK):
            bindir = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        self.pg_ctl = os.path.join(bindir, "pg_ctl") if bindir else shutil.which("pg_ctl")
        self.owner = pwd.getpwuid(os.stat(self.data).st_uid).pw_name

    def _run(self, args, timeout):
        """Runs a server program as the data directory's owner (runuser when we are root)."""
        if os.geteuid() == 0 and self.owner != "root":
            args = ["runuser", "-u", self.owner, "--"] + args
        return subprocess.run(args, cwd="/", capture_output=True, text=True, timeout=timeout)

    def stop_immediate(self):
        """pg_ctl -m immediate stop: every process quits at once, no shutdown checkpoint."""
        r = self._run([self.pg_ctl, "-D", self.data, "-m", "immediate", "-w", "-t", "60", "stop"], 90)
        return r.returncode == 0, (r.stdout + r.stderr).strip()

    def start(self):
        r = self._run([self.pg_ctl, "-D", self.data, "-l", self.log, "-w", "-t", "120", "start"], 150)
        return r.returncode == 0, (r.stdout + r.stderr).strip()

    def running(self):
        r = self._run([self.pg_ctl, "-D", self.data, "status"], 30)
        return r.returncode == 0

    def ensure_running(self):
        """Starts the server if it is down (after a failure half-way through a crash)."""
        if not self.running():
            self.start()
        return self.wait_ready(120)

    def wait_ready(self, timeout):
        """True once a new connection can run a query."""
        def ready():
            with connect(self.admin_db) as c:
                return one(c, "SELECT 1") == 1
        return bool(wait_for(ready, timeout, 0.05))

    def postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline().strip())
        except (OSError, ValueError):
            return None

    def log_size(self):
        try:
            return os.path.getsize(self.log)
        except OSError:
            return 0

    def log_since(self, offset):
        try:
            with open(self.log, "rb") as f:
                f.seek(offset)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


def recreate_db(name):
    with connect("postgres") as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}"')


def drop_db(name):
    try:
        with connect("postgres") as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except psycopg.Error as e:
        print(f"# could not drop database {name}: {e}", file=sys.stderr)
