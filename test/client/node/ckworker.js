'use strict';
// ckworker.js drives concurrency_kit from Node with pg (node-postgres) and prints unnumbered TAP
// lines ("ok - ...", "not ok - ...", "# ...") that test/client/lib/tap.sh numbers.
//
//   node ckworker.js [--workers 8] queue decrement lock retry unique dependencies optimistic results
//
// Connects with the PG* environment variables. The database must have been set up with
// test/client/lib/setup.sql.
const { Pool, escapeIdentifier } = require('pg');

let failures = 0;
function tap(ok, description) {
  if (!ok) failures++;
  console.log(`${ok ? 'ok' : 'not ok'} - ${description}`);
}
const note = (text) => console.log(`# ${text}`);

class LeaseLost extends Error {}

const stats = { heartbeats: 0, heartbeatsLost: 0, leasesLost: 0, failed: 0 };

// withTransaction runs f(client) between BEGIN and COMMIT on a checked-out client; ROLLBACK if it throws.
async function withTransaction(client, f) {
  await client.query('BEGIN');
  try {
    const result = await f(client);
    await client.query('COMMIT');
    return result;
  } catch (e) {
    await client.query('ROLLBACK');
    throw e;
  }
}

// inTransaction runs f(client) in a transaction on one connection of the pool.
async function inTransaction(pool, f) {
  const client = await pool.connect();
  try {
    return await withTransaction(client, f);
  } finally {
    client.release();
  }
}

// work claims jobs from queue "jobs" until no job is left. It records each job's effect in the
// transaction that acknowledges the job, and hands a job that raised back with ck.fail.
async function work(pool, worker) {
  for (;;) {
    const { rows } = await pool.query(
      `SELECT id, lease_token, attempts, payload FROM ck.claim_wait('jobs', lease => '1 second', max_wait => '200 ms')`);
    if (rows.length === 0) { // nothing ready within 200 ms: stop once no job is left at all
      const left = await pool.query('SELECT count(*)::int AS n FROM jobs');
      if (left.rows[0].n === 0) return;
      continue;
    }
    const { id, lease_token: token, attempts: attempt, payload } = rows[0];
    const started = Date.now();
    try {
      await processJob(pool, id, token, payload, attempt);
    } catch (e) {
      if (e instanceof LeaseLost) {
        stats.leasesLost++;
        continue;
      }
      stats.failed++; // the job raised: 'retry' (ready again in 100 ms) or 'dead' (last attempt)
      try {
        await inTransaction(pool, async (tx) => {
          const r = await tx.query(`SELECT ck.fail('jobs', $1, $2, $3, '100 ms') AS outcome`, [id, token, e.message]);
          await tx.query('INSERT INTO failures (job_id, attempt, outcome) VALUES ($1, $2, $3)',
            [id, attempt, r.rows[0].outcome]);
        });
      } catch (f) {
        if (f.code !== 'CK005') throw f; // CK005: the lease was lost, the job is someone else's now
        stats.leasesLost++;
      }
      continue;
    }
    // The effect and the acknowledgement (with a result, kept in the history) in one transaction: it
    // commits only while the lease is ours. pg sends the result object as JSON, untyped: the only
    // four-argument ck.complete takes jsonb.
    try {
      await inTransaction(pool, async (tx) => {
        await tx.query('INSERT INTO effects (job_id, n, attempt, worker, held_ms) VALUES ($1, $2, $3, $4, $5)',
          [id, payload.n, attempt, worker, Date.now() - started]);
        await tx.query(`SELECT ck.complete('jobs', $1, $2, $3)`, [id, token, { attempt, worker }]);
      });
    } catch (e) {
      if (e.code !== 'CK005') throw e; // CK005: the lease was lost; the effect rolled back, the job's new holder records it
      stats.leasesLost++;
    }
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// processJob does a job's work. A slow job runs 2.5 s on a 1 s lease: it heartbeats every 250 ms.
async function processJob(pool, id, token, payload, attempt) {
  if (payload.kind === 'flaky' && attempt === 1) {
    throw new Error(`job ${payload.n} failed on attempt ${attempt}`);
  }
  if (payload.kind === 'slow') {
    for (const end = Date.now() + 2500; Date.now() < end;) {
      await sleep(250);
      const r = await pool.query(`SELECT ck.try_extend_lease('jobs', $1, $2, '1 second') AS until`, [id, token]);
      stats.heartbeats++;
      if (r.rows[0].until === null) { // NULL: the lease was lost (ck.extend_lease would raise CK005)
        stats.heartbeatsLost++;
        throw new LeaseLost();
      }
    }
  }
}

// sell takes n units of sku: the new quantity, or an error whose code is CK001 (not enough) or CK004 (no such sku).
// The key argument takes any type and pg sends parameters untyped, so the key's parameter needs a cast
// (else 42P18 "could not determine data type of parameter $1").
async function sell(pool, sku, n) {
  const r = await pool.query(`SELECT ck.decrement('stock', $1::int, 'qty', $2) AS left`, [sku, n]);
  return Number(r.rows[0].left);
}

// classify says what to do about an error: 'retry', 'busy', 'conflict' (tell the user) or 'error'.
async function classify(pool, error) {
  if (!error || typeof error.code !== 'string' || !/^[0-9A-Z]{5}$/.test(error.code)) return 'error';
  const r = await pool.query('SELECT ck.sqlstate_action($1) AS action', [error.code]);
  return r.rows[0].action;
}

// relay runs f(client) in a transaction that holds advisory lock relay:partition. It waits at most
// 500 ms for the lock, then throws an error with code 55P03 (ck.sqlstate_action: 'busy').
async function relay(client, partition, f) {
  return withTransaction(client, async () => {
    await client.query(`SELECT ck.xact_lock('relay', $1, '500 ms')`, [partition]);
    return f(client); // the lock goes with the transaction
  });
}

// takeSeat books a seat of show 7 for customer while fewer than 20 are taken. ck.retry runs the
// statements in a SERIALIZABLE transaction, again after 40001/40P01; call it outside a transaction.
async function takeSeat(pool, customer) {
  const sql = `SELECT pg_sleep(0.01); -- widens the race for the test
    INSERT INTO seats (show_id, customer, attempt)
    SELECT 7, ${quoteLiteral(customer)}, ck.current_attempt() WHERE (SELECT count(*) FROM seats WHERE show_id = 7) < 20`;
  const r = await pool.query(`CALL ck.retry($1, 'serializable', 20)`, [sql]);
  return r.rows[0].attempts;
}

// enqueueOnce enqueues a job for key unless one is already waiting or running: { id, inserted }.
async function enqueueOnce(pool, key, payload) {
  const r = await pool.query(`SELECT id, inserted FROM ck.enqueue_unique('reports', $1, $2::jsonb)`, [key, payload]);
  return { id: Number(r.rows[0].id), inserted: r.rows[0].inserted };
}

// cancelJob says 'cancelled' (it was waiting), 'cancelling' (a worker runs it: its next
// acknowledgement finds the lease lost) or 'gone'.
async function cancelJob(pool, id) {
  const r = await pool.query(`SELECT ck.cancel('reports', $1) AS outcome`, [id]);
  return r.rows[0].outcome;
}

// enqueueAfter enqueues a job that waits until every job in after (ids) that is still in the queue has
// completed; if one of them is buried or cancelled instead, so is this job, with the reason. db: a pool or a client.
async function enqueueAfter(db, queue, payload, after) {
  const r = await db.query('SELECT ck.enqueue($1, $2::jsonb, after => $3::bigint[]) AS id', [queue, payload, after]);
  return Number(r.rows[0].id);
}

// deadReason says why job id is in the queue's dead letters (its last_error); undefined while it is not there.
async function deadReason(db, queue, id) {
  const r = await db.query(`SELECT last_error FROM ${escapeIdentifier(`${queue}_dead`)} WHERE id = $1`, [id]);
  return r.rows[0]?.last_error;
}

const quoteLiteral = (s) => `'${s.replace(/'/g, "''")}'`;

// editProfile is an optimistic read-modify-write of profile id: it reads the row, computes
// change(row), an object of new column values, and writes it with ck.update_if_version.
// A writer in between makes the write stale (CK006, ck.sqlstate_action: 'retry'): read again,
// apply again, at most attempts times; any other error is thrown at once. It returns
// { version, used }: the new version and the attempts used.
async function editProfile(pool, id, change, attempts = 5) {
  for (let used = 1; ; used++) {
    const { rows } = await pool.query('SELECT visits, note, version FROM profiles WHERE id = $1', [id]);
    if (rows.length === 0) throw new Error(`no profile ${id}`);
    try {
      const r = await pool.query(`SELECT ck.update_if_version('profiles', $1::int, $2, $3) AS version`,
        [id, rows[0].version, await change(rows[0])]); // version: a bigint, a string, passed back unchanged
      return { version: Number(r.rows[0].version), used };
    } catch (e) {
      if (e.code !== 'CK006' || used === attempts) throw e;
    }
  }
}

async function attempt(f) {
  try {
    await f();
    return null;
  } catch (e) {
    return e;
  }
}

// drain runs work() workers times over the pool until queue "jobs" is empty; one TAP line: what they did.
async function drain(pool, workers, what) {
  const started = Date.now();
  const errors = [];
  await Promise.all(Array.from({ length: workers }, (_, i) =>
    work(pool, i + 1).catch((e) => errors.push(`worker ${i + 1}: ${e.message}`))));
  tap(errors.length === 0, `node: ${workers} workers (pg.Pool of ${workers}) ${what} in ` +
    `${((Date.now() - started) / 1000).toFixed(1)} s without an error`);
  errors.forEach(note);
}

async function testQueue(pool, workers) {
  await drain(pool, workers, 'drained the queue');
  tap(stats.heartbeats > 0 && stats.heartbeatsLost === 0,
    `node: every heartbeat of the slow jobs (ck.try_extend_lease, ${stats.heartbeats} in all) kept the lease`);
  note(`${stats.failed} jobs raised and were handed back with ck.fail; ` +
    `${stats.leasesLost} acknowledgements found the lease lost`);
}

async function testDecrement(pool, workers) {
  let error = await attempt(() => sell(pool, 7, 5)); // 3 in stock
  tap(error && error.code === 'CK001', `node: ck.decrement beyond stock: error.code CK001 (${error && error.message})`);
  const detail = error && error.detail;
  tap(typeof detail === 'string' && detail.includes('available 3') && detail.includes('requested 5'),
    `node: ... and error.detail with the numbers (${JSON.stringify(detail)})`);
  tap(await classify(pool, error) === 'conflict', 'node: ck.sqlstate_action classifies CK001 as conflict');
  let qty = (await pool.query('SELECT qty FROM stock WHERE sku = 7')).rows[0].qty;
  tap(qty === 3, `node: the failed decrement changed nothing (qty ${qty})`);
  error = await attempt(() => sell(pool, 999, 1));
  tap(error && error.code === 'CK004' && await classify(pool, error) === 'conflict',
    `node: no such sku: CK004, a conflict (${error && error.message})`);

  let sold = 0, refused = 0;
  const other = [];
  await Promise.all(Array.from({ length: workers }, async () => {
    for (let i = 0; i < 5; i++) {
      const e = await attempt(() => sell(pool, 42, 1));
      if (!e) sold++;
      else if (e.code === 'CK001') refused++;
      else other.push(e.message);
    }
  }));
  qty = (await pool.query('SELECT qty FROM stock WHERE sku = 42')).rows[0].qty;
  tap(sold === 30 && refused === 10 && other.length === 0 && qty === 0,
    `node: ${workers} callers x 5 sales of the last 30 units: ${sold} sold, ${refused} CK001, ` +
    `${other.length} other errors, ${qty} left`);
  other.forEach(note);
}

async function testLock(pool) {
  const a = await pool.connect();
  const b = await pool.connect();
  try {
    const before = (await b.query('SHOW lock_timeout')).rows[0].lock_timeout;
    await a.query('BEGIN');
    await a.query(`SELECT ck.xact_lock('relay', 7)`);
    let ran = false;
    const started = Date.now();
    const error = await attempt(() => relay(b, 7, async () => { ran = true; }));
    const waited = Date.now() - started;
    tap(error && error.code === '55P03' && !ran,
      `node: connection B: 55P03 from ck.xact_lock('relay', 7, '500 ms') (${error && error.message})`);
    tap(waited >= 450 && waited < 3000, `node: ... after waiting about the timeout (${waited} ms)`);
    tap(await classify(pool, error) === 'busy', 'node: ck.sqlstate_action classifies it as busy');
    const one = (await b.query('SELECT 1 AS one')).rows[0].one;
    const after = (await b.query('SHOW lock_timeout')).rows[0].lock_timeout;
    tap(one === 1 && after === before,
      `node: connection B is usable afterwards, its lock_timeout unchanged (${after}, was ${before})`);
    await a.query('COMMIT');
    const held = await relay(b, 7, async (client) => (await client.query(
      `SELECT count(*)::int AS n FROM ck.held_locks() WHERE ns_name = 'relay' AND key = 7`)).rows[0].n);
    tap(held === 1, `node: once A committed, B takes the lock (held ${held})`);
    // Namespaces are created once, up front (setup.sql): a lock call never creates one, so a typo is an error.
    const typo = await attempt(() => withTransaction(b, () => b.query(`SELECT ck.xact_lock('relya', 7)`)));
    tap(typo && typo.code === '42704' && typeof typo.hint === 'string' && typo.hint.includes('"relay"'),
      `node: a mistyped namespace ('relya') raises 42704, its HINT naming relay (${typo && typo.hint})`);
  } finally {
    a.release();
    b.release();
  }
}

async function testRetry(pool, workers) {
  const attempts = new Map();
  const errors = [];
  await Promise.all(Array.from({ length: workers }, async (_, w) => {
    for (let i = 1; i <= 5; i++) {
      const customer = `node-${w + 1}-${i}`;
      try {
        attempts.set(customer, await takeSeat(pool, customer));
      } catch (e) {
        errors.push(e.message);
      }
    }
  }));
  const calls = workers * 5;
  const total = [...attempts.values()].reduce((s, n) => s + n, 0);
  tap(errors.length === 0 && attempts.size === calls,
    `node: ${calls} CALL ck.retry(...) from ${workers} callers returned their attempts`);
  errors.forEach(note);
  const seats = (await pool.query('SELECT customer, attempt FROM seats WHERE show_id = 7')).rows;
  tap(seats.length === 20, `node: exactly 20 seats taken (${seats.length})`);
  tap(total > calls, `node: serialization failures were retried: ${total} attempts for ${calls} calls`);
  const mismatched = seats.filter((s) => attempts.get(s.customer) !== s.attempt).length;
  tap(mismatched === 0,
    `node: each seat was taken by the attempt whose number CALL returned (ck.current_attempt), ${mismatched} mismatches`);
  const error = await attempt(() => inTransaction(pool, (tx) => tx.query(`CALL ck.retry('SELECT 1')`)));
  tap(error && error.code === '25001',
    `node: CALL ck.retry inside a transaction is refused with 25001 (${error && error.message})`);
}

async function testUnique(pool, workers) {
  await pool.query(`SELECT ck.create_queue('reports') WHERE to_regclass('reports') IS NULL`);
  const got = await Promise.all(Array.from({ length: workers }, (_, i) =>
    enqueueOnce(pool, 'report:2026-12', { by: i }).catch((e) => ({ error: e.message }))));
  const errors = got.filter((g) => g.error);
  const ids = new Set(got.filter((g) => !g.error).map((g) => g.id));
  tap(errors.length === 0 && ids.size === 1 && got.filter((g) => g.inserted).length === 1,
    `node: ${workers} producers enqueue one unique key at once: one job inserted, every producer got its id`);
  errors.forEach((e) => note(e.error));
  const [id] = ids;
  const first = await cancelJob(pool, id);
  const second = await cancelJob(pool, id);
  tap(first === 'cancelled' && second === 'gone', `node: ck.cancel of the waiting job says 'cancelled', then 'gone' (${first}, ${second})`);
  const again = await enqueueOnce(pool, 'report:2026-12', { by: 'again' });
  const claimed = (await pool.query(`SELECT id, lease_token FROM ck.claim('reports')`)).rows[0];
  tap(again.inserted && claimed && Number(claimed.id) === again.id,
    "node: the cancelled job's key is free again: a new job, claimed by a worker");
  const outcome = await cancelJob(pool, again.id);
  const error = await attempt(() => pool.query(`SELECT ck.complete('reports', $1, $2)`, [claimed.id, claimed.lease_token]));
  const held = (await pool.query(`SELECT ck.try_complete('reports', $1, $2) AS held`,
    [claimed.id, claimed.lease_token])).rows[0].held;
  tap(outcome === 'cancelling' && error && error.code === 'CK005' && await classify(pool, error) === 'conflict' &&
    held === false,
    `node: cancelling the running job says 'cancelling'; its worker's ck.complete raises CK005, a conflict ` +
    `(${error && error.message}), and ck.try_complete returns false`);
}

// A workflow drained by the workers (its order is checked in SQL by the caller), then a cancelled job
// that buries the jobs after it.
async function testDependencies(pool, workers) {
  let n = 100000;
  const step = async (tx, name, kind, after) => {
    n++;
    const id = await enqueueAfter(tx, 'jobs', { n, kind }, after);
    await tx.query('INSERT INTO enqueued VALUES ($1, $2, $3)', [id, n, kind]);
    await tx.query('INSERT INTO workflow VALUES ($1, $2, $3)', [id, name, after]);
    return id;
  };
  // A fan-out and a fan-in in one transaction. The root is slow (2.5 s: time enough for idle
  // workers to take a job after it too early); of the 16 after it, one fails once, one is slow.
  await inTransaction(pool, async (tx) => {
    const root = await step(tx, 'root', 'slow', []);
    const fanOut = [];
    for (const kind of ['flaky', 'slow', ...Array(14).fill('plain')]) {
      fanOut.push(await step(tx, 'fan-out', kind, [root]));
    }
    await step(tx, 'fan-in', 'plain', fanOut);
  });
  await drain(pool, workers, 'ran a workflow of 18 jobs (1, 16 after it, 1 after those)');

  await pool.query(`SELECT ck.create_queue('reports') WHERE to_regclass('reports') IS NULL`);
  const extract = await enqueueAfter(pool, 'reports', { step: 'extract' }, []);
  const load = await enqueueAfter(pool, 'reports', { step: 'load' }, [extract]);
  const notify = await enqueueAfter(pool, 'reports', { step: 'notify' }, [load]);
  const outcome = await cancelJob(pool, extract);
  const reasons = [await deadReason(pool, 'reports', load), await deadReason(pool, 'reports', notify)];
  const cancelled = `dependency ${extract} did not complete: cancelled`;
  tap(outcome === 'cancelled' && reasons[0] === cancelled &&
    reasons[1] === `dependency ${load} did not complete: ${cancelled}`,
    'node: ck.cancel of a job buries the job after it and the job after that, each with the reason ' +
    `in reports_dead (${JSON.stringify(reasons)})`);
}

async function testOptimistic(pool, workers) {
  const visit = async (row) => {
    await sleep(5); // widens the window between the read and the write, for the test
    return { visits: row.visits + 1 };
  };
  let used = 0;
  const errors = [];
  await Promise.all(Array.from({ length: workers }, async (_, i) => {
    for (let k = 0; k < 5; k++) {
      try {
        const edited = await editProfile(pool, 1, visit, 100); // awaited first: += would read used before the wait
        used += edited.used;
      } catch (e) {
        errors.push(`editor ${i + 1}: ${e.message}`);
      }
    }
  }));
  const { rows } = await pool.query('SELECT visits, version FROM profiles WHERE id = 1');
  const edits = workers * 5;
  tap(errors.length === 0 && rows[0].visits === edits && Number(rows[0].version) === edits + 1,
    `node: ${workers} connections x 5 optimistic edits of one row: ${rows[0].visits} visits counted (none lost), ` +
    `version ${rows[0].version}`);
  errors.forEach(note);
  tap(used > edits, `node: stale writes (CK006) were read again and retried: ${used} attempts for ${edits} edits`);

  let tries = 0;
  const raced = async () => {
    tries++;
    await pool.query(`UPDATE profiles SET note = note || 'x', version = version + 1 WHERE id = 2`);
    return { note: 'mine' };
  };
  let error = await attempt(() => editProfile(pool, 2, raced, 3));
  tap(error && error.code === 'CK006' && tries === 3 && await classify(pool, error) === 'retry',
    `node: always stale: 3 attempts, then CK006 (${error && error.message}), classified retry`);
  error = await attempt(() => editProfile(pool, 1, () => ({ nope: 1 })));
  tap(error && error.code === '42703', `node: another error is not retried: 42703 at once (${error && error.message})`);
}

// pg sends every parameter untyped: against the result overloads a 1.0 ck.complete_and_claim call with
// four or five arguments still means batch (and lease), a result needs all six, and ck.complete_many
// takes an array of objects as results (pg sends each one as JSON). Each finish lands in the history.
async function testResults(pool) {
  await pool.query(`SELECT ck.create_queue('results') WHERE to_regclass('results') IS NULL`);
  await pool.query(`SELECT ck.set_history('results', '1 day') WHERE to_regclass('results_history') IS NULL`);
  const ids = [];
  for (let i = 1; i <= 4; i++) ids.push((await pool.query(`SELECT ck.enqueue('results', $1) AS id`, [{ i }])).rows[0].id);
  const first = (await pool.query(`SELECT id, lease_token FROM ck.claim('results')`)).rows[0];
  const second = (await pool.query(`SELECT id, lease_token FROM ck.complete_and_claim('results', $1, $2, $3)`,
    [first.id, first.lease_token, 1])).rows[0];
  const rest = (await pool.query(`SELECT id, lease_token FROM ck.complete_and_claim('results', $1, $2, $3, $4, $5)`,
    [second.id, second.lease_token, 2, null, { step: 2 }])).rows;
  const done = (await pool.query(`SELECT ck.complete_many('results', $1, $2, $3) AS id`,
    [rest.map((r) => r.id), rest.map((r) => r.lease_token), rest.map((r) => ({ step: 3, id: r.id }))])).rows;
  const history = (await pool.query(`SELECT id, state, result FROM results_history ORDER BY id`)).rows;
  const want = [null, { step: 2 }, { id: ids[2], step: 3 }, { id: ids[3], step: 3 }]; // jsonb orders the keys
  tap(first.id === ids[0] && second.id === ids[1] && rest.map((r) => r.id).join() === ids.slice(2).join() &&
    done.length === 2 && history.length === 4 &&
    history.every((h, k) => h.id === ids[k] && h.state === 'completed' && JSON.stringify(h.result) === JSON.stringify(want[k])),
    'node: untyped parameters: ck.complete_and_claim with 4 arguments (1.0: batch), with 6 (a result object), ' +
    `ck.complete_many with an array of result objects; the history holds each result (${JSON.stringify(history.map((h) => h.result))})`);
}

async function main() {
  const args = process.argv.slice(2);
  let workers = 8;
  const w = args.indexOf('--workers');
  if (w >= 0) workers = Number(args.splice(w, 2)[1]);
  const pool = new Pool({ max: workers });
  const parts = {
    queue: testQueue, decrement: testDecrement, lock: testLock, retry: testRetry, unique: testUnique,
    dependencies: testDependencies, optimistic: testOptimistic, results: testResults,
  };
  for (const part of args) {
    if (!parts[part]) {
      tap(false, `unknown part ${part}`);
      continue;
    }
    try {
      await parts[part](pool, workers);
    } catch (e) {
      tap(false, `node: part ${part} threw ${e.stack}`);
    }
  }
  note(`pg ${require('pg/package.json').version}, node ${process.version}, ` +
    `the pool held ${pool.totalCount} connections at most ${workers}`);
  await pool.end();
  process.exitCode = failures ? 1 : 0;
}

main();
