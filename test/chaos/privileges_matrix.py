#!/usr/bin/env python3
"""The privilege matrix of test/chaos/privileges.sh.

Usage: privileges_matrix.py script SUPERUSER OWNER USER RUN > matrix.sql
       privileges_matrix.py judge OUTPUT_FILE

For every ck function: the rights its equivalent plain SQL needs (SELECT/INSERT/UPDATE/DELETE
on a table, USAGE on its schema, column rights, the namespace registry ck.lock_namespaces,
the sequence ck.lease_tokens, USAGE on schema ck, ownership), and one cell per right: the
role USER gets every right but that one (and one cell with all of them, and a few with
column rights only). In each cell USER runs the plain SQL (rolled back) and then the ck
call, each on a fresh connection; the call must be allowed exactly when the plain SQL is,
refused with 42501 otherwise, and when refused nothing may have changed (chaos.state()).
Tables are passed to ck by OID, so that the call itself, not the name lookup, meets the
missing right.

`script` prints the psql script (run it as SUPERUSER on the database of
privileges_schema.sql); `judge` reads its output and prints unnumbered TAP lines.
"""
import sys

# right -> (SQL that gives it to USER, SQL that takes a PUBLIC default away)
RIGHTS = {
    "USAGE on schema app": ("GRANT USAGE ON SCHEMA app TO {u}", None),
    "CREATE on schema app": ("GRANT CREATE ON SCHEMA app TO {u}", None),
    "SELECT on app.stock": ("GRANT SELECT ON app.stock TO {u}", None),
    "UPDATE on app.stock": ("GRANT UPDATE ON app.stock TO {u}", None),
    "SELECT on app.bookings": ("GRANT SELECT ON app.bookings TO {u}", None),
    "SELECT on app.jobs": ("GRANT SELECT ON app.jobs TO {u}", None),
    "INSERT on app.jobs": ("GRANT INSERT ON app.jobs TO {u}", None),
    "UPDATE on app.jobs": ("GRANT UPDATE ON app.jobs TO {u}", None),
    "DELETE on app.jobs": ("GRANT DELETE ON app.jobs TO {u}", None),
    "SELECT on app.jobs_dead": ("GRANT SELECT ON app.jobs_dead TO {u}", None),
    "SELECT on app.empty": ("GRANT SELECT ON app.empty TO {u}", None),
    "UPDATE on app.empty": ("GRANT UPDATE ON app.empty TO {u}", None),
    "DELETE on app.empty": ("GRANT DELETE ON app.empty TO {u}", None),
    "INSERT on app.empty_dead": ("GRANT INSERT ON app.empty_dead TO {u}", None),
    "SELECT on app.lim": ("GRANT SELECT ON app.lim TO {u}", None),
    "UPDATE on app.lim": ("GRANT UPDATE ON app.lim TO {u}", None),
    "DELETE on app.lim": ("GRANT DELETE ON app.lim TO {u}", None),
    "SELECT on app.mail": ("GRANT SELECT ON app.mail TO {u}", None),
    "INSERT on app.mail": ("GRANT INSERT ON app.mail TO {u}", None),
    "UPDATE on app.mail": ("GRANT UPDATE ON app.mail TO {u}", None),
    "DELETE on app.mail": ("GRANT DELETE ON app.mail TO {u}", None),
    "SELECT on app.mail_dead": ("GRANT SELECT ON app.mail_dead TO {u}", None),
    "INSERT on app.mail_dead": ("GRANT INSERT ON app.mail_dead TO {u}", None),
    "DELETE on app.mail_dead": ("GRANT DELETE ON app.mail_dead TO {u}", None),
    "UPDATE on app.mail_dead": ("GRANT UPDATE ON app.mail_dead TO {u}", None),
    "TRIGGER on app.stock": ("GRANT TRIGGER ON app.stock TO {u}", None),
    "SELECT on app.pk": ("GRANT SELECT ON app.pk TO {u}", None),
    "UPDATE on app.pk": ("GRANT UPDATE ON app.pk TO {u}", None),
    "DELETE on app.pk": ("GRANT DELETE ON app.pk TO {u}", None),
    "ownership (member of the owner role)": ("GRANT {o} TO {u}", None),
    "SELECT on ck.lock_namespaces (PUBLIC)": (None, "REVOKE SELECT ON ck.lock_namespaces FROM PUBLIC"),
    "INSERT on ck.lock_namespaces (PUBLIC)": (None, "REVOKE INSERT ON ck.lock_namespaces FROM PUBLIC"),
    "USAGE on ck.lease_tokens (PUBLIC)": (None, "REVOKE USAGE ON SEQUENCE ck.lease_tokens FROM PUBLIC"),
    "USAGE on schema ck (PUBLIC)": (None, "REVOKE USAGE ON SCHEMA ck FROM PUBLIC"),
    "UPDATE on ck.paused_keys (PUBLIC)": (None, "REVOKE UPDATE ON ck.paused_keys FROM PUBLIC"),
}
# Column rights, given only in the cells that name them.
COLUMN_RIGHTS = {
    "SELECT (sku, qty) on app.stock": "GRANT SELECT (sku, qty) ON app.stock TO {u}",
    "SELECT (sku, state) on app.stock": "GRANT SELECT (sku, state) ON app.stock TO {u}",
    "UPDATE (qty) on app.stock": "GRANT UPDATE (qty) ON app.stock TO {u}",
    "UPDATE (state) on app.stock": "GRANT UPDATE (state) ON app.stock TO {u}",
    "UPDATE (code) on app.stock": "GRANT UPDATE (code) ON app.stock TO {u}",
    "SELECT (sku) on app.stock": "GRANT SELECT (sku) ON app.stock TO {u}",
    "UPDATE (run_at, parked_run_at) on app.lim": "GRANT UPDATE (run_at, parked_run_at) ON app.lim TO {u}",
}
# Before every cell: USER holds nothing, PUBLIC holds the extension's defaults.
RESET = """RESET ROLE;
REVOKE ALL ON SCHEMA app FROM {u};
REVOKE ALL ON ALL TABLES IN SCHEMA app FROM {u};
REVOKE SELECT (sku, qty, state, code), UPDATE (qty, state, code) ON app.stock FROM {u};
REVOKE UPDATE (run_at, parked_run_at) ON app.lim FROM {u};
REVOKE {o} FROM {u};
GRANT USAGE ON SCHEMA ck TO PUBLIC;
GRANT SELECT, INSERT ON ck.lock_namespaces TO PUBLIC;
GRANT USAGE ON SEQUENCE ck.lease_tokens TO PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.queues TO PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON ck.paused_keys TO PUBLIC;"""

CLAIM_SQL = ("UPDATE app.{q} SET lease_token = nextval('ck.lease_tokens'), run_at = now() + interval '30 seconds', "
             "attempts = attempts + 1 WHERE id = ANY (ARRAY(SELECT id FROM app.{q} WHERE run_at <= now() AND attempts < 5 "
             "ORDER BY priority, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)) "
             "RETURNING id, lease_token, attempts, payload, run_at")
CLAIM_JOB = "SELECT id AS jid, lease_token AS jtok FROM ck.claim('app.jobs') \\gset"
CLAIM_MAIL = "SELECT id AS mid, lease_token AS mtok FROM ck.claim('app.mail') \\gset"
REGISTRY = ["SELECT on ck.lock_namespaces (PUBLIC)"]
NEW_NAME = ["SELECT on ck.lock_namespaces (PUBLIC)", "INSERT on ck.lock_namespaces (PUBLIC)"]
STOCK = ["USAGE on schema app", "SELECT on app.stock", "UPDATE on app.stock"]
# Pause and resume (1.1.0): app.pk with one job of key 'priv', the key and the queue not paused
# (PAUSE_KEY), or the key paused (RESUME_KEY); the whole queue paused (RESUME_QUEUE); or a job
# of the paused key claimable again, its lease run out (PARKED: a claim parks it, unclaimed).
PAUSE_KEY = ("SELECT ck.resume_queue('app.pk'), ck.resume_queue('app.pk', 'priv'); DELETE FROM app.pk; "
             "SELECT ck.enqueue('app.pk', concurrency_key => 'priv');")
RESUME_KEY = PAUSE_KEY + " SELECT ck.pause_queue('app.pk', 'priv');"
RESUME_QUEUE = PAUSE_KEY + " SELECT ck.pause_queue('app.pk');"
PARKED = (PAUSE_KEY + " SELECT count(*) FROM ck.claim('app.pk'); SELECT ck.pause_queue('app.pk', 'priv'); "
          "UPDATE app.pk SET run_at = now() - interval '1 second';")
# Not the owner, but a worker's rights on the queue.
WORKER_PK = {"not the owner, a worker's rights (SELECT, UPDATE, DELETE on the queue)":
             ["USAGE on schema app", "SELECT on app.pk", "UPDATE on app.pk", "DELETE on app.pk"]}

# (function, rights, ck call, plain SQL, set-up as the superuser, extra cells {label: rights})
FUNCS = [
    ("try_decrement", STOCK, "SELECT ck.try_decrement(:stock::regclass, 1, 'qty', 1)",
     "UPDATE app.stock SET qty = qty - 1 WHERE sku = 1 AND qty >= 1 RETURNING qty", "",
     {"column rights only: SELECT (sku, qty), UPDATE (qty)":
      ["USAGE on schema app", "SELECT (sku, qty) on app.stock", "UPDATE (qty) on app.stock"],
      "UPDATE on another column only: SELECT, UPDATE (code)":
      ["USAGE on schema app", "SELECT on app.stock", "UPDATE (code) on app.stock"]}),
    ("decrement", STOCK, "SELECT ck.decrement(:stock::regclass, 1, 'qty', 1)",
     "UPDATE app.stock SET qty = qty - 1 WHERE sku = 1 AND qty >= 1 RETURNING qty", "",
     {"column rights only: SELECT (sku, qty), UPDATE (qty)":
      ["USAGE on schema app", "SELECT (sku, qty) on app.stock", "UPDATE (qty) on app.stock"]}),
    ("try_increment", STOCK, "SELECT ck.try_increment(:stock::regclass, 1, 'qty', 1, 2000000)",
     "UPDATE app.stock SET qty = qty + 1 WHERE sku = 1 AND qty <= 2000000 - 1 RETURNING qty", "",
     {"column rights only: SELECT (sku, qty), UPDATE (qty)":
      ["USAGE on schema app", "SELECT (sku, qty) on app.stock", "UPDATE (qty) on app.stock"]}),
    ("increment", STOCK, "SELECT ck.increment(:stock::regclass, 1, 'qty', 1, 2000000)",
     "UPDATE app.stock SET qty = qty + 1 WHERE sku = 1 AND qty <= 2000000 - 1 RETURNING qty", "", {}),
    ("try_transition", STOCK, "SELECT ck.try_transition(:stock::regclass, 1, 'state', 'a', 'a')",
     "UPDATE app.stock SET state = 'a' WHERE sku = 1 AND state = 'a'", "",
     {"column rights only: SELECT (sku, state), UPDATE (state)":
      ["USAGE on schema app", "SELECT (sku, state) on app.stock", "UPDATE (state) on app.stock"]}),
    ("transition", STOCK, "SELECT ck.transition(:stock::regclass, 1, 'state', 'a', 'a')",
     "UPDATE app.stock SET state = 'a' WHERE sku = 1 AND state = 'a'", "", {}),
    # qty as the version (set to 1000000 first, so the call changes the row: rolled back); the
    # plain UPDATE reads sku and qty and writes state and qty, as ck's does.
    ("try_update_if_version", STOCK,
     "BEGIN; SELECT ck.try_update_if_version(:stock::regclass, 1, 1000000, '{\"state\": \"a\"}', 'qty') = 1000001",
     "UPDATE app.stock SET state = 'a', qty = qty + 1 WHERE sku = 1 AND qty = 1000000 RETURNING qty",
     "UPDATE app.stock SET qty = 1000000 WHERE sku = 1;",
     {"column rights only: SELECT (sku, qty), UPDATE (qty)":
      ["USAGE on schema app", "SELECT (sku, qty) on app.stock", "UPDATE (qty) on app.stock"],
      "column rights only: SELECT (sku, qty), UPDATE (qty), UPDATE (state)":
      ["USAGE on schema app", "SELECT (sku, qty) on app.stock", "UPDATE (qty) on app.stock",
       "UPDATE (state) on app.stock"]}),
    ("update_if_version", STOCK,
     "BEGIN; SELECT ck.update_if_version(:stock::regclass, 1, 1000000, '{\"state\": \"a\"}', 'qty')",
     "UPDATE app.stock SET state = 'a', qty = qty + 1 WHERE sku = 1 AND qty = 1000000 RETURNING qty",
     "UPDATE app.stock SET qty = 1000000 WHERE sku = 1;", {}),
    # A row lock needs UPDATE on some column of the table, and SELECT on the key.
    ("lock_rows", STOCK, "BEGIN; SELECT ck.lock_rows(:stock::regclass, '{2,1}'::int[]) = 2",
     "SELECT FROM app.stock WHERE sku = ANY ('{2,1}') ORDER BY sku FOR NO KEY UPDATE", "",
     {"column rights only: SELECT (sku), UPDATE (code)":
      ["USAGE on schema app", "SELECT (sku) on app.stock", "UPDATE (code) on app.stock"]}),
    ("enqueue", ["USAGE on schema app", "INSERT on app.jobs", "SELECT on app.jobs"],
     "SELECT ck.enqueue(:jobs::regclass, '{}')",
     "INSERT INTO app.jobs (payload, run_at, priority) VALUES ('{}', now(), 0) RETURNING id", "", {}),
    # A unique key: INSERT ... ON CONFLICT DO NOTHING, then the holder looked up.
    ("enqueue, unique key", ["USAGE on schema app", "INSERT on app.jobs", "SELECT on app.jobs"],
     "SELECT (ck.enqueue_unique(:jobs::regclass, 'priv-key', '{}')).id > 0",
     "INSERT INTO app.jobs (payload, unique_key) VALUES ('{}', 'priv-key') "
     "ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING RETURNING id", "", {}),
    # A time window: the same, after its row in ck.unique_windows (open to whoever may insert
    # into the queue).
    ("enqueue, unique window", ["USAGE on schema app", "INSERT on app.jobs", "SELECT on app.jobs"],
     "SELECT (ck.enqueue_unique(:jobs::regclass, 'priv-window', '{}', unique_for => '1 minute')).id > 0",
     "INSERT INTO app.jobs (payload, unique_key) VALUES ('{}', 'priv-window') "
     "ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING RETURNING id", "", {}),
    # A concurrency key: the slot is settled before the insert (ck.concurrency_slots is open to
    # whoever may insert into the queue), so a producer needs what a plain enqueue needs.
    ("enqueue, concurrency key", ["USAGE on schema app", "INSERT on app.jobs", "SELECT on app.jobs"],
     "SELECT ck.enqueue(:jobs::regclass, concurrency_key => 'priv-key') > 0",
     "INSERT INTO app.jobs (payload, concurrency_key) VALUES ('{}', 'priv-key') RETURNING id", "", {}),
    # Both keys: the job goes in first, its slot is taken after (a slot held across the insert's
    # wait could deadlock with the departure of the unique key's holder), and the job is parked
    # or unparked by an UPDATE when the slot row read beforehand was wrong. A key of each cell's
    # own, held at limit 0 and seen for the first time, makes it so every time; a plain INSERT
    # of it is parked by the queue's insert trigger with the same UPDATE.
    ("enqueue, unique and concurrency key",
     ["USAGE on schema app", "INSERT on app.jobs", "SELECT on app.jobs", "UPDATE on app.jobs"],
     "SELECT (ck.enqueue_unique(:jobs::regclass, 'priv-both-' || :'cell', '{}', concurrency_key => 'priv-held-' || :'cell')).id > 0",
     "INSERT INTO app.jobs (payload, unique_key, concurrency_key) VALUES ('{}', 'priv-both-' || :'cell', 'priv-held-' || :'cell') "
     "ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING RETURNING id",
     "SELECT ck.set_concurrency_limit('app.jobs', 'priv-held-' || :'cell', 0);", {}),
    # Dependencies: the jobs waited for are locked FOR KEY SHARE (which asks for UPDATE), then the
    # job goes in waiting (its edges in ck.job_dependencies, open to whoever may write to the queue).
    ("enqueue, after", ["USAGE on schema app", "INSERT on app.jobs", "SELECT on app.jobs", "UPDATE on app.jobs"],
     "SELECT ck.enqueue(:jobs::regclass, after => ARRAY[2000]) > 0",
     "WITH l AS (SELECT id FROM app.jobs WHERE id = 2000 FOR KEY SHARE) "
     "INSERT INTO app.jobs (payload, waiting_for) SELECT '{}', 1 FROM l RETURNING id", "", {}),
    ("cancel", ["USAGE on schema app", "SELECT on app.mail", "DELETE on app.mail", "INSERT on app.mail_dead"],
     "SELECT ck.cancel(:mail::regclass, :mid)",
     "WITH d AS (DELETE FROM app.mail WHERE id = :mid RETURNING *) "
     "INSERT INTO app.mail_dead (id, job, attempts, last_error) SELECT d.id, to_jsonb(d), d.attempts, 'cancelled' FROM d",
     CLAIM_MAIL, {}),
    ("claim", ["USAGE on schema app", "SELECT on app.jobs", "UPDATE on app.jobs", "USAGE on ck.lease_tokens (PUBLIC)"],
     "SELECT count(*) FROM ck.claim(:jobs::regclass)", CLAIM_SQL.format(q="jobs"), "", {}),
    # A claim that comes back short also buries expired jobs on their last attempt (README);
    # the plain claim needs no more than the claim's own rights.
    ("claim, nothing ready", ["USAGE on schema app", "SELECT on app.empty", "UPDATE on app.empty",
                              "USAGE on ck.lease_tokens (PUBLIC)"],
     "SELECT count(*) FROM ck.claim(:empty::regclass)", CLAIM_SQL.format(q="empty"), "",
     {"the README's worker rights (SELECT, UPDATE, DELETE on the queue), none on its dead letters":
      ["USAGE on schema app", "SELECT on app.empty", "UPDATE on app.empty", "DELETE on app.empty"],
      "and INSERT on its dead letters": ["USAGE on schema app", "SELECT on app.empty", "UPDATE on app.empty",
                                         "DELETE on app.empty", "INSERT on app.empty_dead"]}),
    ("claim_wait", ["USAGE on schema app", "SELECT on app.jobs", "UPDATE on app.jobs", "USAGE on ck.lease_tokens (PUBLIC)"],
     "SELECT count(*) FROM ck.claim_wait(:jobs::regclass, 1, NULL, '0')", CLAIM_SQL.format(q="jobs"), "", {}),
    ("complete", ["USAGE on schema app", "SELECT on app.jobs", "DELETE on app.jobs"],
     "SELECT ck.complete(:jobs::regclass, :jid, :jtok)",
     "DELETE FROM app.jobs WHERE id = :jid AND lease_token = :jtok", CLAIM_JOB, {}),
    ("complete_many", ["USAGE on schema app", "SELECT on app.jobs", "DELETE on app.jobs"],
     "SELECT count(*) FROM ck.complete_many(:jobs::regclass, ARRAY[:jid]::bigint[], ARRAY[:jtok]::bigint[])",
     "DELETE FROM app.jobs WHERE id = ANY (ARRAY[:jid]::bigint[]) AND lease_token = ANY (ARRAY[:jtok]::bigint[]) RETURNING id",
     CLAIM_JOB, {}),
    ("complete_and_claim", ["USAGE on schema app", "SELECT on app.jobs", "UPDATE on app.jobs", "DELETE on app.jobs",
                            "USAGE on ck.lease_tokens (PUBLIC)"],
     "SELECT count(*) FROM ck.complete_and_claim(:jobs::regclass, :jid, :jtok)",
     "WITH done AS (DELETE FROM app.jobs WHERE id = :jid AND lease_token = :jtok RETURNING id) "
     + CLAIM_SQL.format(q="jobs").replace("WHERE id = ANY", "WHERE EXISTS (SELECT FROM done) AND id = ANY"),
     CLAIM_JOB, {}),
    # A job of a limited key (1) leaves: its slot goes to the key's parked job, an UPDATE of it
    # (done in place when the caller may update the whole queue, else as a statement).
    ("complete, slot handed to a parked job", ["USAGE on schema app", "SELECT on app.lim", "UPDATE on app.lim", "DELETE on app.lim"],
     "SELECT ck.complete(:lim::regclass, :lid, :ltok)",
     "WITH d AS (DELETE FROM app.lim WHERE id = :lid AND lease_token = :ltok RETURNING id) "
     "UPDATE app.lim SET run_at = now(), parked_run_at = NULL WHERE id = (SELECT id FROM app.lim WHERE concurrency_key = 'k' "
     "AND parked_run_at IS NOT NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) AND (SELECT free FROM ck.concurrency_slots "
     "WHERE queue = 'app.lim'::regclass AND concurrency_key = 'k') >= 0 AND EXISTS (SELECT FROM d)",
     "DELETE FROM app.lim; SELECT count(ck.enqueue('app.lim', concurrency_key => 'k')) FROM generate_series(1, 2); "
     "SELECT 'app.lim'::regclass::oid AS lim, id AS lid, lease_token AS ltok FROM ck.claim('app.lim') \\gset",
     {"column rights only: SELECT, DELETE, UPDATE (run_at, parked_run_at)":
      ["USAGE on schema app", "SELECT on app.lim", "DELETE on app.lim", "UPDATE (run_at, parked_run_at) on app.lim"]}),
    ("fail, retried", ["USAGE on schema app", "SELECT on app.jobs", "UPDATE on app.jobs"],
     "SELECT ck.fail(:jobs::regclass, :jid, :jtok, 'x', '1 second')",
     "UPDATE app.jobs SET lease_token = NULL, run_at = now() + interval '1 second', last_error = 'x' "
     "WHERE id = :jid AND lease_token = :jtok", CLAIM_JOB, {}),
    # ck.fail first locks the job (SELECT ... FOR UPDATE, which takes UPDATE) to decide between
    # retry and dead: the plain SQL that does the same decision locks it too.
    ("fail, dead", ["USAGE on schema app", "SELECT on app.mail", "UPDATE on app.mail", "DELETE on app.mail",
                    "INSERT on app.mail_dead"],
     "SELECT ck.fail(:mail::regclass, :mid, :mtok, 'x')",
     "WITH l AS (SELECT id FROM app.mail WHERE id = :mid AND lease_token = :mtok FOR UPDATE), "
     "d AS (DELETE FROM app.mail WHERE id IN (SELECT id FROM l) AND lease_token = :mtok RETURNING *) "
     "INSERT INTO app.mail_dead (id, job, attempts, last_error) SELECT d.id, to_jsonb(d), d.attempts, 'x' FROM d",
     CLAIM_MAIL, {}),
    ("extend_lease", ["USAGE on schema app", "SELECT on app.jobs", "UPDATE on app.jobs"],
     "SELECT ck.extend_lease(:jobs::regclass, :jid, :jtok, '1 minute')",
     "UPDATE app.jobs SET run_at = now() + interval '1 minute' WHERE id = :jid AND lease_token = :jtok RETURNING run_at",
     CLAIM_JOB, {}),
    ("retry_dead", ["USAGE on schema app", "SELECT on app.mail_dead", "DELETE on app.mail_dead", "INSERT on app.mail"],
     "SELECT ck.retry_dead(:mail::regclass, :did)",
     "WITH r AS (DELETE FROM app.mail_dead WHERE id = :did RETURNING job) "
     "INSERT INTO app.mail SELECT (jsonb_populate_record(NULL::app.mail, r.job || '{\"attempts\": 0}')).* FROM r",
     "SELECT min(id) AS did FROM app.mail_dead \\gset", {}),
    ("purge_dead", ["USAGE on schema app", "SELECT on app.mail_dead", "DELETE on app.mail_dead"],
     "SELECT ck.purge_dead(:mail::regclass, '100 years')",
     "DELETE FROM app.mail_dead WHERE died_at < now() - interval '100 years'", "", {}),
    # By filter, in a batch: FOR UPDATE SKIP LOCKED on the dead letters takes UPDATE there too.
    ("purge_dead_matching", ["USAGE on schema app", "SELECT on app.mail_dead", "UPDATE on app.mail_dead",
                             "DELETE on app.mail_dead"],
     "SELECT ck.purge_dead_matching(:mail::regclass, older_than => '100 years')",
     "DELETE FROM app.mail_dead WHERE id = ANY (ARRAY(SELECT id FROM app.mail_dead WHERE died_at < now() - interval '100 years'"
     " ORDER BY died_at LIMIT 1000 FOR UPDATE SKIP LOCKED))", "", {}),
    ("retry_dead_matching", ["USAGE on schema app", "SELECT on app.mail_dead", "UPDATE on app.mail_dead",
                             "DELETE on app.mail_dead", "SELECT on app.mail", "INSERT on app.mail"],
     "SELECT ck.retry_dead_matching(:mail::regclass, batch => 1)",
     "WITH p AS (SELECT d.id, d.job FROM app.mail_dead AS d WHERE NOT EXISTS (SELECT FROM app.mail AS j"
     " WHERE j.unique_key = d.job ->> 'unique_key') ORDER BY d.died_at LIMIT 1 FOR UPDATE SKIP LOCKED), "
     "r AS (INSERT INTO app.mail SELECT (jsonb_populate_record(NULL::app.mail, p.job || '{\"attempts\": 0}')).* FROM p"
     " ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING RETURNING id) "
     "DELETE FROM app.mail_dead WHERE id IN (SELECT id FROM r)", "", {}),
    ("queue_stats", ["USAGE on schema app", "SELECT on app.jobs", "SELECT on app.jobs_dead"],
     "SELECT (ck.queue_stats(:jobs::regclass)).running >= 0",
     "SELECT (SELECT count(*) FROM app.jobs), (SELECT count(*) FROM app.jobs_dead)", "", {}),
    ("claim_frontier", ["USAGE on schema app", "SELECT on app.jobs"],
     "SELECT count(*) >= 0 FROM ck_internal.claim_frontier(:jobs::regclass)",
     "SELECT count(*) FROM app.jobs", "", {}),
    # Like claim_frontier: what it tells is the queue's, so reading the queue is the right it needs.
    ("claim_path", ["USAGE on schema app", "SELECT on app.jobs"],
     "SELECT (ck.claim_path(:jobs::regclass)).path IN ('frontier', 'discover', 'full')",
     "SELECT count(*) FROM app.jobs", "", {}),
    ("create_queue", ["USAGE on schema app", "CREATE on schema app"],
     "SELECT ck.create_queue('app.q_' || :'run' || :cell)",
     "DO $$BEGIN CREATE TABLE app.plain_q (id bigint PRIMARY KEY); CREATE INDEX ON app.plain_q (id); END$$", "", {}),
    ("drop_queue", ["ownership (member of the owner role)"],
     "SELECT ck.drop_queue(:dq::regclass)", "DROP TABLE app.dq, app.dq_dead",
     "SET ROLE {o}; SELECT FROM ck.create_queue('app.dq'); RESET ROLE; SELECT 'app.dq'::regclass::oid AS dq \\gset",
     {"not the owner, every other right on the queue and its dead letters":
      ["USAGE on schema app", "CREATE on schema app"]}),
    ("set_concurrency_limit", ["ownership (member of the owner role)"],
     "SELECT ck.set_concurrency_limit(:lq::regclass, 'priv', 1)", "ALTER TABLE app.lq SET (fillfactor = 100)",
     "SET ROLE {o}; SELECT FROM ck.create_queue('app.lq') WHERE to_regclass('app.lq') IS NULL; RESET ROLE; "
     "SELECT 'app.lq'::regclass::oid AS lq \\gset",
     {"not the owner, every other right on the queue and its dead letters":
      ["USAGE on schema app", "CREATE on schema app"]}),
    # Pause and resume are the owner's, as ck.set_concurrency_limit: a worker may not (42501),
    # and a refused call parks nothing and leaves ck.paused_keys and ck.queues as they were.
    ("pause_queue, a key", ["ownership (member of the owner role)"],
     "SELECT ck.pause_queue(:pk::regclass, 'priv')", "ALTER TABLE app.pk SET (fillfactor = 100)", PAUSE_KEY, WORKER_PK),
    ("resume_queue, a key", ["ownership (member of the owner role)"],
     "SELECT ck.resume_queue(:pk::regclass, 'priv')", "ALTER TABLE app.pk SET (fillfactor = 100)", RESUME_KEY, WORKER_PK),
    ("pause_queue", ["ownership (member of the owner role)"],
     "SELECT ck.pause_queue(:pk::regclass)", "ALTER TABLE app.pk SET (fillfactor = 100)", PAUSE_KEY, WORKER_PK),
    ("resume_queue", ["ownership (member of the owner role)"],
     "SELECT ck.resume_queue(:pk::regclass)", "ALTER TABLE app.pk SET (fillfactor = 100)", RESUME_QUEUE, WORKER_PK),
    # A claim that meets a job of a paused key parks it, unclaimed (the call fails with 22012 if it
    # took the job instead), under FOR KEY SHARE of the key's row in ck.paused_keys (open to whoever
    # may claim: the paused_keys_claimer policy): a worker's rights are enough.
    ("claim, a paused key's job parked",
     ["USAGE on schema app", "SELECT on app.pk", "UPDATE on app.pk", "USAGE on ck.lease_tokens (PUBLIC)",
      "UPDATE on ck.paused_keys (PUBLIC)"],
     "SELECT 1 / (1 - count(*))::int FROM ck.claim(:pk::regclass)",
     "WITH k AS (SELECT FROM ck.paused_keys WHERE queue = 'app.pk'::regclass AND concurrency_key = 'priv' FOR KEY SHARE) "
     + CLAIM_SQL.format(q="pk").replace("WHERE id = ANY", "WHERE EXISTS (SELECT FROM k) AND id = ANY"),
     PARKED,
     {"the README's worker rights (SELECT, UPDATE, DELETE on the queue)":
      ["USAGE on schema app", "SELECT on app.pk", "UPDATE on app.pk", "DELETE on app.pk"]}),
    ("lock_namespace, a registered name", REGISTRY, "SELECT ck.lock_namespace('registered')",
     "SELECT id FROM ck.lock_namespaces WHERE name = 'registered'", "", {}),
    ("lock_namespace, a new name", NEW_NAME, "SELECT ck.lock_namespace('new-' || :'run' || :cell)",
     "INSERT INTO ck.lock_namespaces (name) VALUES ('plain') ON CONFLICT (name) DO NOTHING RETURNING id", "", {}),
    ("xact_lock(text), a registered name", REGISTRY, "SELECT ck.xact_lock('registered', 7)",
     "SELECT pg_advisory_xact_lock((SELECT id FROM ck.lock_namespaces WHERE name = 'registered'), 7)", "", {}),
    ("try_xact_lock(text)", REGISTRY, "SELECT ck.try_xact_lock('registered', 7)",
     "SELECT pg_try_advisory_xact_lock((SELECT id FROM ck.lock_namespaces WHERE name = 'registered'), 7)", "", {}),
    ("session_lock(text), session_unlock(text)", REGISTRY,
     "SELECT ck.session_lock('registered', 7), ck.session_unlock('registered', 7)",
     "SELECT pg_advisory_lock(n.id, 7), pg_advisory_unlock(n.id, 7) FROM ck.lock_namespaces AS n WHERE n.name = 'registered'",
     "", {}),
    ("xact_lock(int)", [], "SELECT ck.xact_lock(1, 7)", "SELECT pg_advisory_xact_lock(1, 7)", "", {}),
    ("try_xact_lock(int)", [], "SELECT ck.try_xact_lock(1, 7)", "SELECT pg_try_advisory_xact_lock(1, 7)", "", {}),
    ("session_lock(int), session_unlock(int)", [], "SELECT ck.session_lock(1, 7), ck.session_unlock(1, 7)",
     "SELECT pg_advisory_lock(1, 7), pg_advisory_unlock(1, 7)", "", {}),
    ("session_unlock_all", [], "SELECT ck.session_unlock_all()", "SELECT pg_advisory_unlock_all()", "", {}),
    ("session_locks_held", [], "SELECT count(*) FROM ck_internal.session_locks_held()", "SELECT 1", "", {}),
    ("held_locks", REGISTRY, "SELECT count(*) FROM ck.held_locks()",
     "SELECT count(*) FROM pg_locks AS l LEFT JOIN ck.lock_namespaces AS n ON n.id = l.classid::integer", "", {}),
    ("lock_waits", REGISTRY, "SELECT count(*) FROM ck.lock_waits()",
     "SELECT count(*) FROM pg_locks AS l LEFT JOIN ck.lock_namespaces AS n ON n.id = l.classid::integer", "", {}),
    ("set_lock_timeout", [], "BEGIN; SELECT ck.set_lock_timeout('1 second'); ROLLBACK",
     "SET LOCAL lock_timeout = '1s'", "", {}),
    ("retry", STOCK, "CALL ck.retry('UPDATE app.stock SET qty = qty WHERE sku = 1')",
     "UPDATE app.stock SET qty = qty WHERE sku = 1", "", {}),
    ("current_attempt", [], "SELECT ck.current_attempt()", "SELECT 0", "", {}),
    ("retry_stats", [], "SELECT (ck.retry_stats()).calls", "SELECT 0", "", {}),
    ("sqlstate_action", [], "SELECT ck.sqlstate_action('40001')", "SELECT 'retry'", "", {}),
    ("claim_wait_mode", [], "SELECT ck.claim_wait_mode()", "SELECT 'commit'", "", {}),
    # Like pg_stat_user_tables: counts of every queue of the database, to every user.
    ("queue_activity", [], "SELECT count(*) >= 0 FROM ck.queue_activity()", "SELECT count(*) FROM pg_stat_user_tables", "", {}),
    # The generators check their arguments against the table: the plain equivalent reads
    # those columns.
    # (They run no SQL on the table, which is passed by OID: USAGE on its schema is given in
    # every cell, as the plain SQL needs it to name the table.)
    ("overlap_guard_ddl", ["SELECT on app.bookings"],
     "SELECT ck.overlap_guard_ddl(:bookings::regclass, 'during', '{room}')",
     "SELECT during, room FROM app.bookings WHERE false", "", {}),
    ("find_overlaps", ["USAGE on schema app", "SELECT on app.bookings"],
     "SELECT count(*) FROM ck.find_overlaps(:bookings::regclass, 'during', '{room}')",
     "SELECT count(*) FROM app.bookings AS a JOIN app.bookings AS b ON a.room = b.room AND a.during && b.during "
     "AND a.ctid < b.ctid", "", {}),
    ("add_overlap_guard", ["ownership (member of the owner role)"],
     "BEGIN; SELECT ck.add_overlap_guard(:bookings::regclass, 'during', '{room}'); ROLLBACK",
     "ALTER TABLE app.bookings ADD CONSTRAINT plain_guard EXCLUDE USING gist (room WITH =, during WITH &&)", "",
     {"not the owner, USAGE and SELECT": ["USAGE on schema app", "SELECT on app.bookings"]}),
    ("unique_guard_ddl", ["SELECT on app.stock"],
     "SELECT ck.unique_guard_ddl(:stock::regclass, '{code}', 'qty > 0')",
     "SELECT code FROM app.stock WHERE qty > 0 AND false", "", {}),
    ("version_guard_ddl", ["SELECT on app.stock"],
     "SELECT ck.version_guard_ddl(:stock::regclass, 'qty')",
     "SELECT qty FROM app.stock WHERE false", "", {}),
    ("add_version_guard", ["USAGE on schema app", "TRIGGER on app.stock"],
     "BEGIN; SELECT ck.add_version_guard(:stock::regclass, 'qty'); ROLLBACK",
     "CREATE TRIGGER plain_guard BEFORE UPDATE ON app.stock FOR EACH ROW EXECUTE FUNCTION ck_internal.version_guard('qty')", "",
     {}),
    ("volatility_audit", [], "SELECT count(*) FROM ck.volatility_audit('app')",
     "SELECT count(*) FROM pg_proc WHERE pronamespace = 'app'::regnamespace", "", {}),
    ("lock_audit", [], "SELECT count(*) FROM ck.lock_audit('app')",
     "SELECT count(*) FROM pg_proc WHERE pronamespace = 'app'::regnamespace", "", {}),
    ("race_audit", [], "SELECT count(*) FROM ck.race_audit('app')",
     "SELECT count(*) FROM pg_proc WHERE pronamespace = 'app'::regnamespace", "", {}),
    # The race detector's reports: anyone reads them (like pg_stat_activity, the statements only
    # of roles one may see); only superusers reset them (like pg_stat_reset_shared).
    ("race_reports", [], "SELECT count(*) >= 0 FROM ck.race_reports()", "SELECT count(*) FROM pg_stat_activity", "", {}),
    ("race_reports_reset", [], "SELECT ck.race_reports_reset() >= 0", "SELECT pg_stat_reset_shared('bgwriter')", "", {}),
    ("scan_check", ["USAGE on schema app", "SELECT on app.stock"],
     "SELECT count(*) FROM ck.scan_check('SELECT * FROM app.stock WHERE qty > 0')",
     "EXPLAIN SELECT * FROM app.stock WHERE qty > 0", "", {}),
]


# Rights given in every cell of a function, not varied.
ALWAYS = {"overlap_guard_ddl": ["USAGE on schema app"], "unique_guard_ddl": ["USAGE on schema app"],
          "version_guard_ddl": ["USAGE on schema app"]}


def cells():
    for name, rights, ck, plain, pre, extra in FUNCS:
        always = ALWAYS.get(name, [])
        yield name, "every right it needs" if rights else "no right at all", always + rights, [], ck, plain, pre
        for r in rights:
            yield name, "without " + r, always + [x for x in rights if x != r], [r], ck, plain, pre
        for label, given in extra.items():
            yield name, label, always + given, [], ck, plain, pre


def script(su, owner, user, run):
    out = ["\\set run %s" % run, "\\set VERBOSITY sqlstate", "\\set SHOW_CONTEXT never", "\\pset format unaligned",
           "\\pset tuples_only on", "SET client_min_messages = warning;",
           "SELECT 'app.stock'::regclass::oid AS stock, 'app.bookings'::regclass::oid AS bookings, "
           "'app.jobs'::regclass::oid AS jobs, 'app.mail'::regclass::oid AS mail, "
           "'app.empty'::regclass::oid AS empty, 'app.pk'::regclass::oid AS pk \\gset"]
    for n, (name, label, given, taken, ck, plain, pre) in enumerate(cells(), 1):
        out.append("\\echo @@cell %d" % n)
        out.append("\\set cell %d" % n)
        out.append(RESET.format(u=user, o=owner))
        for r in given:
            g = RIGHTS[r][0] if r in RIGHTS else COLUMN_RIGHTS[r]
            if g:
                out.append(g.format(u=user, o=owner) + ";")
        for r in RIGHTS:   # a PUBLIC default is taken away unless the cell keeps it
            if RIGHTS[r][1] and (r in taken):
                out.append(RIGHTS[r][1] + ";")
        if pre:
            out.append(pre.format(o=owner))
        out.append("SELECT chaos.state() AS state_before \\gset")
        out.append("\\c - %s" % user)
        out.append("\\set LAST_ERROR_SQLSTATE 00000")
        out.append("BEGIN; %s; ROLLBACK;" % plain)
        out.append("\\echo @@plain %d :LAST_ERROR_SQLSTATE" % n)
        out.append("\\set LAST_ERROR_SQLSTATE 00000")
        out.append(ck + ";")
        out.append("\\echo @@ck %d :LAST_ERROR_SQLSTATE" % n)
        out.append("ROLLBACK;")
        out.append("\\c - %s" % su)
        out.append("SELECT '@@unchanged %d ' || (chaos.state() = :'state_before');" % n)
        # a cell's queue is dropped again (by the call or here) so the next one can make it
        out.append("DROP TABLE IF EXISTS app.dq, app.dq_dead; DELETE FROM ck.queues WHERE queue::text LIKE 'app.dq%';")
    out.append(RESET.format(u=user, o=owner))
    return "\n".join(out)


def judge(path):
    plain, ck, unchanged = {}, {}, {}
    for line in open(path, errors="replace"):
        parts = line.split()
        if len(parts) == 3 and parts[0] in ("@@plain", "@@ck", "@@unchanged"):
            {"@@plain": plain, "@@ck": ck, "@@unchanged": unchanged}[parts[0]][int(parts[1])] = parts[2]
    total = failed = refused = 0
    functions = set()
    for n, (name, label, *_rest) in enumerate(cells(), 1):
        total += 1
        functions.add(name.split(",")[0].split("(")[0])
        p, c, u = plain.get(n), ck.get(n), unchanged.get(n) in ("t", "true")
        why = None
        if p is None or c is None:
            why = "no result (the script stopped?)"
        elif p not in ("00000", "42501"):
            why = "the plain SQL failed with %s: the cell is wrong" % p
        elif p == "00000" and c != "00000":
            why = "ck refuses (%s) what plain SQL allows" % c
        elif p == "42501" and c == "00000":
            why = "ck allows what plain SQL refuses (42501)"
        elif p == "42501" and c != "42501":
            why = "ck refuses with %s, not 42501" % c
        elif p == "42501" and not u:
            why = "refused, but something changed"
        if p == "42501":
            refused += 1
        outcome = "allowed" if p == "00000" and c == "00000" else "refused (%s)" % c
        if why:
            failed += 1
            print("not ok - %s, %s: %s  # %s" % (name, label, outcome, why))
        else:
            print("ok - %s, %s: %s" % (name, label, outcome))
    print("# privilege matrix: %d cells over %d functions (%d where plain SQL is refused), %d failed"
          % (total, len(functions), refused, failed))


if __name__ == "__main__":
    if sys.argv[1] == "script":
        print(script(*sys.argv[2:6]))
    elif sys.argv[1] == "judge":
        judge(sys.argv[2])
    else:
        sys.exit(__doc__)
