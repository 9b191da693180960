// make bench-peers: pg-boss and graphile-worker with no-op handlers.
//
//   node peers.js versions
//   node peers.js SYSTEM WORKERS JOBS SECONDS
//
// SYSTEM is one of
//   pgboss-work      pg-boss's work(): WORKERS calls of work() (one polling worker each), batchSize 1,
//                    pollingIntervalSeconds 0.5 (its minimum; the default is 2)
//   pgboss-fetch     WORKERS loops of boss.fetch(queue) + boss.complete(queue, id), each waiting for the other
//                    (pg-boss's manual-polling API: its SQL at full speed, no polling interval)
//   graphile         graphile-worker's run() with concurrency WORKERS, maxPoolSize WORKERS + 1, otherwise defaults
//                    (each job fetched with get_job and completed with complete_job on its own)
//   graphile-batch   the same with the settings of graphile-worker's performance page: localQueue size 500,
//                    completeJobBatchDelay 0, failJobBatchDelay 0
//
// Enqueues JOBS jobs first with the system's bulk API (not timed), then starts the workers and times until the
// database holds no job left to do, or SECONDS have passed; prints one line:
// "SYSTEM WORKERS JOBS_DONE SECONDS JOBS_PER_SECOND", jobs done as the database counts them.
//
//   node peers.js pgboss-latency BACKLOG
//                    makes pg-boss queue 'latency' with BACKLOG jobs (raw SQL INSERT, which pg-boss supports) and prints
//                    a pgbench script: pg-boss's own fetch statement for one job (from the installed package, with its
//                    arguments filled in), its complete statement, and one INSERT to keep the backlog at its size
//
// Connection: the PG* environment variables (PGHOST, PGPORT, PGUSER, PGDATABASE, PGOPTIONS for synchronous_commit).
'use strict';

const { performance } = require('node:perf_hooks');
const pg = require('pg');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const noop = async () => {};
const quiet = () => {};

function versionOf(name) {
    return require(`${name}/package.json`).version;
}

// Until the deadline (performance.now() ms): waits until the handlers saw every job (handled() >= jobs), then until
// the query (one row, column n: jobs not yet finished) returns 0, looking every 20 ms. Returns [moment, jobs left].
async function finish(pool, sql, params, handled, jobs, deadline) {
    while (handled() < jobs && performance.now() < deadline) await sleep(20);
    for (;;) {
        const { rows } = await pool.query(sql, params);
        const left = Number(rows[0].n);
        const now = performance.now();
        if (left === 0 || now >= deadline) return [now, left];
        await sleep(20);
    }
}

// A new, empty pg-boss queue (a new partition of its job table): deleteQueue refuses a queue that holds jobs.
async function resetQueue(boss, pool, queue) {
    if (await boss.getQueue(queue)) {
        await pool.query('DELETE FROM pgboss.job WHERE name = $1', [queue]);
        await boss.deleteQueue(queue);
    }
    await boss.createQueue(queue);
}

async function pgboss(mode, workers, jobs, seconds) {
    const PgBoss = require('pg-boss');
    const queue = 'peers';
    // A pool big enough for every worker's fetch and complete and pg-boss's own upkeep.
    const boss = new PgBoss({ database: process.env.PGDATABASE, max: workers + 4 });
    boss.on('error', (err) => console.error('pg-boss:', err.message));
    await boss.start();
    const watch = new pg.Pool({ max: 1 });
    await resetQueue(boss, watch, queue);
    for (let done = 0; done < jobs; done += 10000) {
        const n = Math.min(10000, jobs - done);
        await boss.insert(Array.from({ length: n }, (_, i) => ({ name: queue, data: { n: done + i } })));
    }
    await watch.query('VACUUM ANALYZE pgboss.job');
    const left = "SELECT count(*) AS n FROM pgboss.job WHERE name = $1 AND state < 'completed'";

    const t0 = performance.now();
    let handled = 0;
    let stop = false;
    const loops = [];
    if (mode === 'work') {
        for (let w = 0; w < workers; w++) {
            await boss.work(queue, { batchSize: 1, pollingIntervalSeconds: 0.5 }, async (batch) => {
                handled += batch.length;
            });
        }
    } else {
        for (let w = 0; w < workers; w++) {
            loops.push((async () => {
                while (!stop) {
                    const batch = await boss.fetch(queue);
                    if (batch.length === 0) {
                        await sleep(5);
                        continue;
                    }
                    await noop(batch);
                    await boss.complete(queue, batch.map((j) => j.id));
                    handled += batch.length;
                }
            })());
        }
    }
    const [t1, notDone] = await finish(watch, left, [queue], () => handled, jobs, t0 + seconds * 1000);
    stop = true;
    await Promise.all(loops);
    await boss.offWork(queue).catch(quiet);
    await boss.stop({ graceful: false, wait: true, timeout: 2000 }).catch(quiet);
    await watch.end();
    return [jobs - notDone, (t1 - t0) / 1000];
}

async function graphile(batched, workers, jobs, seconds) {
    const { run, makeWorkerUtils } = require('graphile-worker');
    const { Logger } = require('@graphile/logger');
    const logger = new Logger(() => quiet);
    const connectionString = `postgres:///${process.env.PGDATABASE}`;
    const utils = await makeWorkerUtils({ connectionString, logger });
    await utils.migrate();
    const watch = new pg.Pool({ max: 1 });
    await watch.query('DELETE FROM graphile_worker._private_jobs');
    for (let done = 0; done < jobs; done += 10000) {
        const n = Math.min(10000, jobs - done);
        await utils.addJobs(Array.from({ length: n }, (_, i) => ({ identifier: 'noop', payload: { n: done + i } })));
    }
    await utils.release();
    await watch.query('VACUUM ANALYZE graphile_worker._private_jobs');

    let handled = 0;
    const worker = batched
        ? { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 }
        : {};
    const t0 = performance.now();
    const runner = await run({
        connectionString,
        concurrency: workers,
        maxPoolSize: workers + 1,
        noHandleSignals: true,
        logger,
        preset: { worker },
        taskList: { noop: async () => { handled++; } },
    });
    const [t1, notDone] = await finish(watch, 'SELECT count(*) AS n FROM graphile_worker._private_jobs', [],
                                       () => handled, jobs, t0 + seconds * 1000);
    await runner.stop();
    await watch.end();
    return [jobs - notDone, (t1 - t0) / 1000];
}

// One line of SQL for pgbench: $1 and $2 replaced by the given SQL literals.
function oneLine(sql, args) {
    return sql.replace(/--[^\n]*/g, '').replace(/\s+/g, ' ').trim()
        .replace(/\$(\d+)/g, (_, i) => args[Number(i) - 1]);
}

async function pgbossLatency(backlog) {
    const PgBoss = require('pg-boss');
    const plans = require('pg-boss/src/plans');
    const queue = 'latency';
    const boss = new PgBoss({ database: process.env.PGDATABASE, max: 2, supervise: false, schedule: false });
    await boss.start();
    const db = new pg.Pool({ max: 1 });
    await resetQueue(boss, db, queue);
    await boss.stop({ graceful: false, wait: true, timeout: 2000 }).catch(quiet);
    await db.query(`INSERT INTO pgboss.job (name, data)
                    SELECT $1, jsonb_build_object('n', g) FROM generate_series(1, $2::int) AS g`, [queue, backlog]);
    await db.query('VACUUM ANALYZE pgboss.job');
    await db.end();
    const fetch = plans.fetchNextJob('pgboss')({ batchSize: 1, priority: true, includeMetadata: false });
    const complete = plans.completeJobs('pgboss');
    console.log('-- pg-boss ' + versionOf('pg-boss') + ': fetch one job (its SQL), complete it (its SQL), enqueue one');
    console.log(oneLine(fetch, [`'${queue}'`, '1']) + ' \\gset');
    console.log(oneLine(complete, [`'${queue}'`, 'ARRAY[:id]', 'NULL']) + ';');
    console.log(`INSERT INTO pgboss.job (name, data) VALUES ('${queue}', '{"n": 0}');`);
}

async function main() {
    const [system, w, j, sec] = process.argv.slice(2);
    if (system === 'versions') {
        console.log(`pg-boss ${versionOf('pg-boss')}, graphile-worker ${versionOf('graphile-worker')}, ` +
                    `pg ${versionOf('pg')}, node ${process.versions.node}`);
        return;
    }
    if (system === 'pgboss-latency') {
        await pgbossLatency(Number(w));
        return;
    }
    const workers = Number(w);
    const jobs = Number(j);
    const limit = Number(sec);
    if (!(workers > 0 && jobs > 0 && limit > 0)) {
        throw new Error('usage: node peers.js versions | SYSTEM WORKERS JOBS SECONDS | pgboss-latency BACKLOG');
    }
    let done, seconds;
    switch (system) {
        case 'pgboss-work': [done, seconds] = await pgboss('work', workers, jobs, limit); break;
        case 'pgboss-fetch': [done, seconds] = await pgboss('fetch', workers, jobs, limit); break;
        case 'graphile': [done, seconds] = await graphile(false, workers, jobs, limit); break;
        case 'graphile-batch': [done, seconds] = await graphile(true, workers, jobs, limit); break;
        default: throw new Error(`unknown system ${system}`);
    }
    console.log(`${system} ${workers} ${done} ${seconds.toFixed(3)} ${(done / seconds).toFixed(1)}`);
}

main().then(() => process.exit(0), (err) => {
    console.error(err);
    process.exit(1);
});
