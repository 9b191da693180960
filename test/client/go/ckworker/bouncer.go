package main

// Facts about PgBouncer in transaction pooling mode, each shown by a test. They rely on
// PgBouncer handing the most recently released server connection to the next transaction
// (server_round_robin = 0, its default): a second client that opens a transaction right after
// a client's statement gets that client's server connection, so the client's next statement
// lands on another one. Every test checks that this happened, by pg_backend_pid().

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v4"
)

// connectAll opens one pgx connection per DSN; on failure it reports and closes what it opened.
func connectAll(ctx context.Context, what string, dsns ...string) ([]*pgx.Conn, bool) {
	var conns []*pgx.Conn
	for _, dsn := range dsns {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			tap(false, "%s: connect: %v", what, err)
			for _, c := range conns {
				c.Close(ctx)
			}
			return nil, false
		}
		conns = append(conns, c)
	}
	return conns, true
}

func closeAll(ctx context.Context, conns []*pgx.Conn) {
	for _, c := range conns {
		c.Close(ctx)
	}
}

// hold opens a transaction on client k and returns it with the backend it landed on.
func hold(ctx context.Context, k *pgx.Conn) (pgx.Tx, int, error) {
	tx, err := k.Begin(ctx)
	if err != nil {
		return nil, 0, err
	}
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		_ = tx.Rollback(ctx)
		return nil, 0, err
	}
	return tx, pid, nil
}

// twice runs q (which returns a backend pid and a number) on client c two times, the second
// time while client k holds the server connection of the first in a transaction.
func twice(ctx context.Context, c, k *pgx.Conn, q string, args ...interface{}) (pids [2]int, vals [2]float64, err error) {
	if err = c.QueryRow(ctx, q, args...).Scan(&pids[0], &vals[0]); err != nil {
		return
	}
	tx, held, err := hold(ctx, k)
	if err != nil {
		return
	}
	defer tx.Rollback(ctx)
	if held != pids[0] {
		err = fmt.Errorf("the holding client got backend %d, not %d", held, pids[0])
		return
	}
	err = c.QueryRow(ctx, q, args...).Scan(&pids[1], &vals[1])
	return
}

// testPrepare: pgx's default statement cache prepares named statements, which live in one server
// connection; through transaction pooling the next use lands on another, and fails unless PgBouncer
// tracks prepared statements (tracked: 1.24 or later). statement_cache_mode=describe (unnamed
// statements only) works with any PgBouncer.
func testPrepare(ctx context.Context, dsn string, tracked bool) {
	for _, mode := range []string{"prepare", "describe"} {
		conns, ok := connectAll(ctx, "prepare "+mode, dsn+" statement_cache_mode="+mode, dsn)
		if !ok {
			continue
		}
		c, k := conns[0], conns[1]
		q := `SELECT pg_backend_pid(), ck.sqlstate_action($1) = 'busy'`
		var p1, p2 int
		var b bool
		err1 := c.QueryRow(ctx, q, "55P03").Scan(&p1, &b)
		tx, held, err := hold(ctx, k)
		if err != nil {
			tap(false, "pgbouncer: hold a server connection: %v", err)
			closeAll(ctx, conns)
			continue
		}
		err2 := c.QueryRow(ctx, q, "55P03").Scan(&p2, &b)
		_ = tx.Rollback(ctx)
		if mode == "prepare" && tracked {
			tap(err1 == nil && err2 == nil && held == p1 && p2 != p1,
				"pgbouncer: it tracks prepared statements, so pgx's default statement cache (prepare) works when a "+
					"statement's next use lands on another server connection (backends %d, %d; %v)", p1, p2, err2)
		} else if mode == "prepare" {
			st := sqlstate(err2)
			tap(err1 == nil && held == p1 && (st == "26000" || st == "42P05"),
				"pgbouncer: pgx's default statement cache (prepare) fails once a statement's next use lands on another "+
					"server connection: %v", err2)
		} else {
			tap(err1 == nil && err2 == nil && held == p1 && p2 != p1,
				"pgbouncer: with statement_cache_mode=describe the same statement runs on the next server connection "+
					"(backends %d, %d; %v)", p1, p2, err2)
		}
		closeAll(ctx, conns)
	}
}

// testSessionLock: what ck.session_lock does through transaction pooling, and through a session-mode pool.
func testSessionLock(ctx context.Context, dsn, direct, sessionDSN string) {
	conns, ok := connectAll(ctx, "session lock", dsn, dsn, dsn, direct)
	if !ok {
		return
	}
	defer closeAll(ctx, conns)
	a, b, k, d := conns[0], conns[1], conns[2], conns[3]

	var pa, pb int
	err := a.QueryRow(ctx, `SELECT pg_backend_pid() FROM ck.session_lock('leader', 1)`).Scan(&pa)
	tap(err == nil, "pgbouncer: client A takes ck.session_lock('leader', 1) (%v)", err)
	err = b.QueryRow(ctx, `SELECT pg_backend_pid() FROM ck.session_lock('leader', 1, '1 second')`).Scan(&pb)
	tap(err == nil && pb == pa,
		"pgbouncer: client B 'takes' it too, at once: its statement ran on A's server connection, where the lock is "+
			"re-entrant; both believe they are the leader (backends %d, %d; %v)", pa, pb, err)
	tx, held, err := hold(ctx, k)
	if err != nil {
		tap(false, "pgbouncer: hold a server connection: %v", err)
		return
	}
	_, err = a.Exec(ctx, `SELECT ck.session_unlock('leader', 1)`)
	_ = tx.Rollback(ctx)
	tap(held == pa && sqlstate(err) == "55000",
		"pgbouncer: A's unlock ran on another server connection: 55000, nothing released (%v)", err)
	var holder, holds int
	var state string
	err = d.QueryRow(ctx, `SELECT l.pid, a.state, count(*) OVER ()
	                       FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	                       WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
	                         AND l.classid::int = ck.lock_namespace('leader') AND l.objid = 1`).Scan(&holder, &state, &holds)
	tap(err == nil && holder == pa && state == "idle" && holds == 1,
		"pgbouncer: the lock leaked: held by server connection %d, idle in the pool, with no client (%v)", holder, err)
	var got bool
	err = d.QueryRow(ctx, `SELECT ck.try_xact_lock('leader', 1)`).Scan(&got)
	tap(err == nil && !got, "pgbouncer: so nobody else can take leader:1 until PgBouncer closes that server connection")
	_, _ = d.Exec(ctx, `SELECT pg_terminate_backend($1)`, pa)

	// A pool in session mode gives each client its own server connection for as long as it is connected.
	sconns, ok := connectAll(ctx, "session pool", sessionDSN, sessionDSN)
	if !ok {
		return
	}
	defer closeAll(ctx, sconns)
	sa, sb := sconns[0], sconns[1]
	_, err = sa.Exec(ctx, `SELECT ck.session_lock('leader', 2)`)
	_, errB := sb.Exec(ctx, `SELECT ck.session_lock('leader', 2, '300 ms')`)
	_, errU := sa.Exec(ctx, `SELECT ck.session_unlock('leader', 2)`)
	_, errB2 := sb.Exec(ctx, `SELECT ck.session_lock('leader', 2, '300 ms')`)
	_, errU2 := sb.Exec(ctx, `SELECT ck.session_unlock('leader', 2)`)
	tap(err == nil && sqlstate(errB) == "55P03" && errU == nil && errB2 == nil && errU2 == nil,
		"pgbouncer: through a pool in session mode the session lock excludes the other client (55P03) and "+
			"the unlock releases it (%v; %v; %v; %v; %v)", err, errB, errU, errB2, errU2)
}

// testCaches: plans, queue settings and namespace numbers cached per backend stay right when
// one client's transactions land on different server connections.
func testCaches(ctx context.Context, dsn, direct string) {
	conns, ok := connectAll(ctx, "caches", dsn, dsn, direct)
	if !ok {
		return
	}
	defer closeAll(ctx, conns)
	c, k, d := conns[0], conns[1], conns[2]

	// Plans: both server connections plan ck.try_decrement on cache_stock, then the table changes under them.
	dec := `SELECT pg_backend_pid(), ck.try_decrement('cache_stock', $1::int, 'qty', 1)::float8`
	pids, vals, err := twice(ctx, c, k, dec, 1)
	tap(err == nil && pids[0] != pids[1] && vals == [2]float64{99, 98},
		"pgbouncer caches: one client's two decrements ran on backends %d and %d (%v, %v)", pids[0], pids[1], vals, err)
	_, err = d.Exec(ctx, `ALTER TABLE cache_stock RENAME COLUMN qty TO qty_old;
	                      ALTER TABLE cache_stock ADD COLUMN qty bigint NOT NULL DEFAULT 1000;
	                      ALTER TABLE cache_stock ALTER COLUMN sku TYPE bigint`)
	tap(err == nil, "pgbouncer caches: another connection renames qty, adds a new qty and retypes the key (%v)", err)
	again, vals, err := twice(ctx, c, k, dec, 1)
	var old int
	_ = d.QueryRow(ctx, `SELECT qty_old FROM cache_stock WHERE sku = 1`).Scan(&old)
	tap(err == nil && samePair(pids, again) && vals == [2]float64{999, 998} && old == 98,
		"pgbouncer caches: on both backends the next decrement changes the new column (%v; old column %d; backends %v; %v)",
		vals, old, again, err)

	// Queue settings: the lease a claim gives comes from ck.queues, changed between claims.
	claim := `SELECT pg_backend_pid(), extract(epoch FROM lease_until - clock_timestamp())::float8 FROM ck.claim('cache_q')`
	pids, vals, err = twice(ctx, c, k, claim)
	tap(err == nil && pids[0] != pids[1] && near(vals[0], 30) && near(vals[1], 30),
		"pgbouncer caches: claims on backends %d and %d lease for the queue's 30 s (%.1f, %.1f; %v)",
		pids[0], pids[1], vals[0], vals[1], err)
	_, err = d.Exec(ctx, `UPDATE ck.queues SET lease = '7 seconds' WHERE queue = 'cache_q'::regclass`)
	again, vals, err2 := twice(ctx, c, k, claim)
	tap(err == nil && err2 == nil && samePair(pids, again) && near(vals[0], 7) && near(vals[1], 7),
		"pgbouncer caches: after ck.queues changed to 7 s, both backends lease for 7 s (%.1f, %.1f; %v; %v)",
		vals[0], vals[1], err, err2)

	// Namespace numbers: the name means the same key on every backend.
	ns := `SELECT pg_backend_pid(), ck.lock_namespace('bouncer_ns')::float8`
	pids, vals, err = twice(ctx, c, k, ns)
	tap(err == nil && pids[0] != pids[1] && vals[0] == vals[1],
		"pgbouncer caches: ck.lock_namespace('bouncer_ns') is %v on backend %d and %v on backend %d (%v)",
		vals[0], pids[0], vals[1], pids[1], err)
	tx, err := c.Begin(ctx)
	var lockPid, otherPid int
	var otherGot, directGot bool
	if err == nil {
		err = tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM ck.xact_lock('bouncer_ns', 5)`).Scan(&lockPid)
	}
	if err == nil {
		err = k.QueryRow(ctx, `SELECT pg_backend_pid(), ck.try_xact_lock('bouncer_ns', 5)`).Scan(&otherPid, &otherGot)
	}
	if err == nil {
		err = d.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1::int, 5)`, int(vals[0])).Scan(&directGot)
	}
	if tx != nil {
		_ = tx.Rollback(ctx)
	}
	tap(err == nil && lockPid != otherPid && !otherGot && !directGot,
		"pgbouncer caches: bouncer_ns:5 held on backend %d excludes ck.try_xact_lock by name on backend %d and "+
			"pg_try_advisory_xact_lock by number (%v)", lockPid, otherPid, err)
}

func samePair(a, b [2]int) bool {
	return a == b || (a[0] == b[1] && a[1] == b[0])
}

// near: within a second below a lease of want seconds.
func near(got, want float64) bool {
	return got > want-1 && got <= want
}
