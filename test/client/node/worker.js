'use strict';
// A concurrency_kit worker in Node (pg): 4 workers take jobs from queue "emails" and record each in
// table "sent" in the transaction that completes it (with a result). It connects with the PG*
// environment variables and stops once the queue is empty.   Run: npm install pg && node worker.js
// A producer that waits for its job's result:   node worker.js send bob@example.com
// pg prepares no named statements unless a query has a name: it runs behind PgBouncer as it is.
const { Pool } = require('pg');

const pool = new Pool({ max: 4 });

// send is the job's work (here only a check); it returns the job's result. An exception hands the job back.
function send(email) {
  if (!email.to.includes('@')) throw new Error(`bad address ${JSON.stringify(email.to)}`);
  return { delivered_to: email.to };
}

async function work(worker) {
  let sent = 0;
  for (;;) {
    const { rows } = await pool.query(`SELECT id, lease_token, attempts, payload
      FROM ck.claim_wait('emails', max_wait => '1 second')`);
    if (rows.length === 0) { // nothing ready for 1 s (or paused): stop if the queue is empty
      const { rows: [{ empty }] } = await pool.query('SELECT NOT EXISTS (SELECT FROM emails) AS empty');
      if (empty) break;
      continue;
    }
    // id and lease_token are bigints: pg returns them as strings, passed back unchanged.
    const { id, lease_token: token, attempts, payload: email } = rows[0];
    let result;
    try {
      result = send(email);
    } catch (e) { // 'retry' after a backoff, 'dead' after max_attempts, NULL if lost
      await pool.query(`SELECT ck.try_fail('emails', $1, $2, $3)`, [id, token, e.message]);
      continue;
    }
    const client = await pool.connect(); // the effect and the acknowledgement (with the result) commit together
    try {
      await client.query('BEGIN');
      await client.query('INSERT INTO sent (job_id, recipient, attempts) VALUES ($1, $2, $3)', [id, email.to, attempts]);
      await client.query(`SELECT ck.complete('emails', $1, $2, $3)`, [id, token, result]); // pg sends objects as JSON
      await client.query('COMMIT');
      sent++;
    } catch (e) {
      await client.query('ROLLBACK');
      if (e.code !== 'CK005') throw e; // CK005: lease lost, the job's new holder records it
    } finally {
      client.release();
    }
  }
  console.log(`worker ${worker}: ${sent} sent`);
}

// A producer: enqueues an email and waits (up to 30 s) until a worker has finished it.
async function request(to) {
  const { rows: [{ id }] } = await pool.query(`SELECT ck.enqueue('emails', $1) AS id`, [{ to }]);
  const { rows: [{ state, result, error }] } = await pool.query(
    `SELECT state, result, error FROM ck.await_job('emails', $1, '30 seconds')`, [id]);
  console.log(`job ${id}: ${state} ${state === 'completed' ? `delivered to ${result.delivered_to}` : error}`);
}

async function main() {
  if (process.argv[2] === 'send') return request(process.argv[3]); // a producer, not the workers
  // Set-up, once, before the workers start.
  await pool.query(`CREATE TABLE IF NOT EXISTS sent (job_id bigint PRIMARY KEY, recipient text NOT NULL,
    attempts int NOT NULL, sent_at timestamptz NOT NULL DEFAULT now())`);
  await pool.query(`SELECT ck.create_queue('emails') WHERE to_regclass('emails') IS NULL`);
  // Keep finished jobs, with their results, 7 days (run ck.maintain_history('emails') hourly).
  await pool.query(`SELECT ck.set_history('emails', '7 days') WHERE to_regclass('emails_history') IS NULL`);
  const stopped = (await Promise.allSettled([1, 2, 3, 4].map(work))).filter((r) => r.status === 'rejected');
  if (stopped.length > 0) throw stopped[0].reason; // a worker stopped on an error
}

main().catch((e) => { console.error(e); process.exitCode = 1; }).finally(() => pool.end());
