'use strict';
// The race programs in Node (pg, node-postgres): the guide's examples written naively and written
// correctly, run by test/client/race_programs.sh against test/client/races/setup.sql; a port of
// test/client/races/programs.py, with the same programs, SQL texts and output.
//
//   NODE_PATH=test/client/node/node_modules node programs.js PROGRAM CLIENTS TRANSACTIONS
//
// Each of CLIENTS connections (the PG* environment variables) sets ck.race_detector = 'warning' and
// runs TRANSACTIONS transactions of PROGRAM; the output is one line: "transactions=N reports=M
// errors=E", where reports counts the warnings with SQLSTATE CK008 the clients received and errors
// the transactions that failed (serialization failures and deadlocks of the correct programs are
// retried, not counted). pg returns bigint columns as strings: the programs convert them with Number.
const { Client, DatabaseError } = require('pg');

const NAIVE = ['stock', 'seats', 'transfer', 'optimistic'];
const CORRECT = ['atomic', 'locked', 'try_decrement', 'if_version', 'serializable'];

// inTransaction runs f() between BEGIN and COMMIT; ROLLBACK if it throws.
async function inTransaction(conn, f) {
  await conn.query('BEGIN');
  try {
    const result = await f();
    await conn.query('COMMIT');
    return result;
  } catch (e) {
    await conn.query('ROLLBACK');
    throw e;
  }
}

// last20 is Python's s[-20:] (by code points).
const last20 = (s) => Array.from(s).slice(-20).join('');

const programs = {
  // Read the stock, decide in the application, write the value computed there.
  async stock(conn) {
    await inTransaction(conn, async () => {
      const qty = Number((await conn.query('SELECT qty FROM stock WHERE id = 1')).rows[0].qty);
      if (qty > 0) {
        await conn.query('UPDATE stock SET qty = $1 WHERE id = 1', [qty - 1]);
      }
    });
  },

  async seats(conn) {
    await inTransaction(conn, async () => {
      const left = Number((await conn.query('SELECT seats_left FROM shows WHERE id = 1')).rows[0].seats_left);
      if (left > 0) {
        await conn.query('UPDATE shows SET seats_left = $1 WHERE id = 1', [left - 1]);
        await conn.query('INSERT INTO tickets (show_id) VALUES (1)');
      }
    });
  },

  async transfer(conn) {
    await inTransaction(conn, async () => {
      const a = Number((await conn.query('SELECT balance FROM accounts WHERE id = 1')).rows[0].balance);
      const b = Number((await conn.query('SELECT balance FROM accounts WHERE id = 2')).rows[0].balance);
      if (a >= 1) {
        await conn.query('UPDATE accounts SET balance = $1 WHERE id = 1', [a - 1]);
        await conn.query('UPDATE accounts SET balance = $1 WHERE id = 2', [b + 1]);
      }
    });
  },

  // "Optimistic", but the version read is only written back, never checked.
  async optimistic(conn) {
    await inTransaction(conn, async () => {
      const { body, version } = (await conn.query('SELECT body, version FROM docs WHERE id = 1')).rows[0];
      await conn.query('UPDATE docs SET body = $1, version = $2 WHERE id = 1', [last20(body) + 'x', Number(version) + 1]);
    });
  },

  async atomic(conn) {
    await conn.query('UPDATE stock SET qty = qty - 1 WHERE id = 1 AND qty > 0');
  },

  async locked(conn) {
    await inTransaction(conn, async () => {
      const qty = Number((await conn.query('SELECT qty FROM stock WHERE id = 1 FOR NO KEY UPDATE')).rows[0].qty);
      if (qty > 0) {
        await conn.query('UPDATE stock SET qty = $1 WHERE id = 1', [qty - 1]);
      }
    });
  },

  async try_decrement(conn) {
    await conn.query("SELECT ck.try_decrement('stock', 1, 'qty')");
  },

  async if_version(conn) {
    for (;;) {
      const newVersion = await inTransaction(conn, async () => {
        const { body, version } = (await conn.query('SELECT body, version FROM docs WHERE id = 1')).rows[0];
        const { rows } = await conn.query(
          "SELECT ck.try_update_if_version('docs', 1, $1, jsonb_build_object('body', $2::text)) AS new_version",
          [version, last20(body) + 'x']);
        return rows[0].new_version;
      });
      if (newVersion !== null) return; // NULL: the row changed since the read; read again
    }
  },

  async serializable(conn) {
    await conn.query("CALL ck.retry('SELECT transfer(1, 2, 1)', 'serializable', 100)");
  },
};

// client runs the transactions of one connection and adds its counts to totals. Like a Python
// thread that raised, a client whose connection fails reports why and adds nothing.
async function client(program, transactions, totals) {
  let reports = 0;
  let errors = 0;
  const conn = new Client();
  conn.on('notice', (msg) => {
    if (msg.code === 'CK008') reports++;
  });
  conn.on('error', () => {}); // a broken connection fails the next query, which counts it
  try {
    await conn.connect();
    await conn.query("SET ck.race_detector = 'warning'");
    const run = programs[program];
    for (let i = 0; i < transactions; i++) {
      try {
        await run(conn);
      } catch (e) {
        // The server's errors and the connection's, as psycopg.Error; anything else is a bug here.
        if (!(e instanceof DatabaseError) && e.code === undefined && !/connection|Connection/.test(e.message)) throw e;
        errors++;
      }
    }
  } catch (e) {
    console.error(`client: ${e.message}`);
    return;
  } finally {
    await conn.end().catch(() => {});
  }
  totals.transactions += transactions;
  totals.reports += reports;
  totals.errors += errors;
}

async function main() {
  const [program, clientsArg, transactionsArg] = process.argv.slice(2);
  const clients = Number.parseInt(clientsArg, 10);
  const transactions = Number.parseInt(transactionsArg, 10);
  if (!NAIVE.includes(program) && !CORRECT.includes(program)) {
    console.error(`unknown program ${program}`);
    process.exit(1);
  }
  if (!Number.isInteger(clients) || !Number.isInteger(transactions)) {
    console.error('usage: node programs.js PROGRAM CLIENTS TRANSACTIONS');
    process.exit(2);
  }
  const totals = { transactions: 0, reports: 0, errors: 0 };
  await Promise.all(Array.from({ length: clients }, () => client(program, transactions, totals)));
  console.log(`transactions=${totals.transactions} reports=${totals.reports} errors=${totals.errors}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
