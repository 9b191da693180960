// ckworker drives concurrency_kit from Go with pgx v4 and prints unnumbered TAP lines
// ("ok - ...", "not ok - ...", "# ...") that test/client/lib/tap.sh numbers.
//
//	ckworker -parts queue,decrement,lock,retry,unique,dependencies [-dsn DSN] [-workers 8]
//	ckworker -parts prepare,session,caches -dsn BOUNCER_DSN -direct DIRECT_DSN -session-dsn SESSION_POOL_DSN
//
// An empty DSN means the PG* environment variables. The database must have been set up with
// test/client/lib/setup.sql.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

var failures int

// tap prints one test line.
func tap(ok bool, format string, args ...interface{}) {
	if ok {
		fmt.Printf("ok - "+format+"\n", args...)
	} else {
		failures++
		fmt.Printf("not ok - "+format+"\n", args...)
	}
}

// note prints a TAP comment.
func note(format string, args ...interface{}) {
	fmt.Printf("# "+format+"\n", args...)
}

// sqlstate is the SQLSTATE an error carries, "" when it carries none.
func sqlstate(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func main() {
	dsn := flag.String("dsn", "", "connection string (empty: PG* environment)")
	direct := flag.String("direct", "", "connection string straight to the server, for the PgBouncer parts")
	sessionDSN := flag.String("session-dsn", "", "connection string to a PgBouncer pool in session mode")
	parts := flag.String("parts", "queue,decrement,lock,retry", "comma-separated parts to run")
	workers := flag.Int("workers", 8, "connections in the pool, and queue workers")
	tracked := flag.Bool("tracked-prepares", false, "PgBouncer tracks named prepared statements (1.24 or later)")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(*dsn)
	if err != nil {
		fmt.Println("not ok - parse the connection string:", err)
		os.Exit(1)
	}
	cfg.MaxConns = int32(*workers)
	pool, err := pgxpool.ConnectConfig(ctx, cfg)
	if err != nil {
		fmt.Println("not ok - connect:", err)
		os.Exit(1)
	}
	defer pool.Close()

	for _, part := range strings.Split(*parts, ",") {
		switch part {
		case "queue":
			testQueue(ctx, pool, *workers)
		case "decrement":
			testDecrement(ctx, pool, *workers)
		case "lock":
			testLock(ctx, pool)
		case "retry":
			testRetry(ctx, pool, *workers)
		case "unique":
			testUnique(ctx, pool, *workers)
		case "dependencies":
			testDependencies(ctx, pool, *workers)
		case "optimistic":
			testOptimistic(ctx, pool, *workers)
		case "prepare":
			testPrepare(ctx, *dsn, *tracked)
		case "session":
			testSessionLock(ctx, *dsn, *direct, *sessionDSN)
		case "caches":
			testCaches(ctx, *dsn, *direct)
		default:
			tap(false, "unknown part %q", part)
		}
	}
	if failures > 0 {
		os.Exit(1)
	}
}

// drain runs work in goroutines until queue "jobs" is empty; one TAP line: what they did.
func drain(ctx context.Context, pool *pgxpool.Pool, workers int, what string) {
	started := time.Now()
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 1; w <= workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			errs[w-1] = work(ctx, pool, w)
		}(w)
	}
	wg.Wait()
	var bad []string
	for w, err := range errs {
		if err != nil {
			bad = append(bad, fmt.Sprintf("worker %d: %v", w+1, err))
		}
	}
	tap(len(bad) == 0, "go: %d workers (pgxpool) %s in %.1f s without an error", workers, what,
		time.Since(started).Seconds())
	for _, b := range bad {
		note("%s", b)
	}
}

// testQueue runs the workers until the queue is empty; the outcome is checked in SQL by the caller.
func testQueue(ctx context.Context, pool *pgxpool.Pool, workers int) {
	drain(ctx, pool, workers, "drained the queue")
	tap(heartbeats.Load() > 0 && heartbeatsLost.Load() == 0,
		"go: every heartbeat of the slow jobs (ck.try_extend_lease, %d in all) kept the lease", heartbeats.Load())
	note("client connections: %d", pool.Stat().TotalConns())
	note("%d jobs raised and were handed back with ck.fail; %d acknowledgements found the lease lost",
		failed.Load(), leasesLost.Load())
}

// testDecrement: CK001 and CK004 reach the driver's error object; eight connections selling the last units.
func testDecrement(ctx context.Context, pool *pgxpool.Pool, workers int) {
	_, err := sell(ctx, pool, 7, 5) // 3 in stock
	var pgErr *pgconn.PgError
	isPg := errors.As(err, &pgErr)
	tap(isPg && pgErr.Code == "CK001", "go: ck.decrement beyond stock: *pgconn.PgError with Code CK001 (got %v)", err)
	if isPg {
		tap(strings.Contains(pgErr.Detail, "available 3") && strings.Contains(pgErr.Detail, "requested 5"),
			"go: ... and the DETAIL with the numbers (%q)", pgErr.Detail)
	} else {
		tap(false, "go: ... and the DETAIL with the numbers")
	}
	tap(classify(ctx, pool, err) == "conflict", "go: ck.sqlstate_action classifies CK001 as conflict")
	var qty int
	_ = pool.QueryRow(ctx, `SELECT qty FROM stock WHERE sku = 7`).Scan(&qty)
	tap(qty == 3, "go: the failed decrement changed nothing (qty %d)", qty)
	_, err = sell(ctx, pool, 999, 1)
	tap(sqlstate(err) == "CK004" && classify(ctx, pool, err) == "conflict",
		"go: no such sku: CK004, a conflict (got %v)", err)

	// 30 units, 8 connections trying 5 times each: exactly 30 sales, 10 CK001.
	var mu sync.Mutex
	sold, refused := 0, 0
	var other []string
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				_, err := sell(ctx, pool, 42, 1)
				mu.Lock()
				switch {
				case err == nil:
					sold++
				case sqlstate(err) == "CK001":
					refused++
				default:
					other = append(other, err.Error())
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	_ = pool.QueryRow(ctx, `SELECT qty FROM stock WHERE sku = 42`).Scan(&qty)
	tap(sold == 30 && refused == 10 && len(other) == 0 && qty == 0,
		"go: %d connections x 5 sales of the last 30 units: %d sold, %d CK001, %d other errors, %d left",
		workers, sold, refused, len(other), qty)
	for _, o := range other {
		note("%s", o)
	}
}

// testOptimistic: workers x 5 optimistic edits of one row count every visit; a writer that always
// gets in between makes the loop give up with CK006; another error is not retried.
func testOptimistic(ctx context.Context, pool *pgxpool.Pool, workers int) {
	visit := func(p profile) map[string]any {
		time.Sleep(5 * time.Millisecond) // widens the window between the read and the write, for the test
		return map[string]any{"visits": p.Visits + 1}
	}
	var mu sync.Mutex
	used := 0
	var errs []string
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				_, n, err := editProfile(ctx, pool, 1, visit, 100)
				mu.Lock()
				used += n
				if err != nil {
					errs = append(errs, err.Error())
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var visits int
	var version int64
	_ = pool.QueryRow(ctx, `SELECT visits, version FROM profiles WHERE id = 1`).Scan(&visits, &version)
	edits := workers * 5
	tap(len(errs) == 0 && visits == edits && version == int64(edits+1),
		"go: %d connections x 5 optimistic edits of one row: %d visits counted (none lost), version %d",
		workers, visits, version)
	for _, e := range errs {
		note("%s", e)
	}
	tap(used > edits, "go: stale writes (CK006) were read again and retried: %d attempts for %d edits", used, edits)

	tries := 0
	raced := func(p profile) map[string]any {
		tries++
		_, _ = pool.Exec(ctx, `UPDATE profiles SET note = note || 'x', version = version + 1 WHERE id = 2`)
		return map[string]any{"note": "mine"}
	}
	_, _, err := editProfile(ctx, pool, 2, raced, 3)
	tap(sqlstate(err) == "CK006" && tries == 3 && classify(ctx, pool, err) == "retry",
		"go: always stale: 3 attempts, then CK006 (%v), classified retry", err)
	_, n, err := editProfile(ctx, pool, 1, func(profile) map[string]any { return map[string]any{"nope": 1} }, 5)
	tap(sqlstate(err) == "42703" && n == 1, "go: another error is not retried: 42703 at once (%v)", err)
}

// testLock: a timed ck.xact_lock while another pooled connection holds the lock.
func testLock(ctx context.Context, pool *pgxpool.Pool) {
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second) // a lock that waits without bound fails here
	defer cancel()
	a, err := pool.Acquire(lctx)
	if err != nil {
		tap(false, "go: acquire a connection: %v", err)
		return
	}
	defer a.Release()
	b, err := pool.Acquire(lctx)
	if err != nil {
		tap(false, "go: acquire a second connection: %v", err)
		return
	}
	defer b.Release()

	holder, err := a.Begin(lctx)
	if err == nil {
		_, err = holder.Exec(lctx, `SELECT ck.xact_lock('relay', 7)`)
	}
	tap(err == nil, "go: connection A holds relay:7 in a transaction (%v)", err)
	var before, after string
	_ = b.QueryRow(lctx, `SHOW lock_timeout`).Scan(&before)
	t0 := time.Now()
	ran := false
	err = relay(lctx, b, 7, func(pgx.Tx) error { ran = true; return nil })
	waited := time.Since(t0)
	tap(sqlstate(err) == "55P03" && !ran, "go: connection B: 55P03 from ck.xact_lock('relay', 7, '500 ms') (got %v)", err)
	tap(waited >= 450*time.Millisecond && waited < 3*time.Second,
		"go: ... after waiting about the timeout (%d ms)", waited.Milliseconds())
	tap(classify(lctx, pool, err) == "busy", "go: ck.sqlstate_action classifies it as busy")
	var one int
	err = b.QueryRow(lctx, `SELECT 1`).Scan(&one)
	_ = b.QueryRow(lctx, `SHOW lock_timeout`).Scan(&after)
	tap(err == nil && one == 1 && after == before,
		"go: connection B is usable afterwards, its lock_timeout unchanged (%q, was %q)", after, before)
	if holder != nil {
		_ = holder.Commit(lctx)
	}
	held := 0
	err = relay(lctx, b, 7, func(tx pgx.Tx) error {
		return tx.QueryRow(lctx, `SELECT count(*) FROM ck.held_locks() WHERE ns_name = 'relay' AND key = 7`).Scan(&held)
	})
	tap(err == nil && held == 1, "go: once A committed, B takes the lock (%v, held %d)", err, held)
}

// testRetry: CALL ck.retry from eight connections at once, and refused inside a transaction.
func testRetry(ctx context.Context, pool *pgxpool.Pool, workers int) {
	var mu sync.Mutex
	attempts := map[string]int{}
	var errs []string
	var wg sync.WaitGroup
	for w := 1; w <= workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 1; i <= 5; i++ {
				customer := fmt.Sprintf("go-%d-%d", w, i)
				n, err := takeSeat(ctx, pool, customer)
				mu.Lock()
				if err != nil {
					errs = append(errs, err.Error())
				} else {
					attempts[customer] = n
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	total, calls := 0, workers*5
	for _, n := range attempts {
		total += n
	}
	tap(len(errs) == 0 && len(attempts) == calls, "go: %d CALL ck.retry(...) from %d connections returned their attempts",
		calls, workers)
	for _, e := range errs {
		note("%s", e)
	}
	var taken int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM seats WHERE show_id = 7`).Scan(&taken)
	tap(taken == 20, "go: exactly 20 seats taken (%d)", taken)
	tap(total > calls, "go: serialization failures were retried: %d attempts for %d calls", total, calls)
	mismatched := 0
	rows, err := pool.Query(ctx, `SELECT customer, attempt FROM seats WHERE show_id = 7`)
	if err == nil {
		for rows.Next() {
			var c string
			var n int
			if rows.Scan(&c, &n) != nil || attempts[c] != n {
				mismatched++
			}
		}
		rows.Close()
		err = rows.Err()
	}
	tap(err == nil && mismatched == 0,
		"go: each seat was taken by the attempt whose number CALL returned (ck.current_attempt), %d mismatches", mismatched)
	err = pool.BeginFunc(ctx, func(tx pgx.Tx) error {
		var n int
		return tx.QueryRow(ctx, `CALL ck.retry('SELECT 1')`).Scan(&n)
	})
	tap(sqlstate(err) == "25001", "go: CALL ck.retry inside a transaction is refused with 25001 (got %v)", err)
}
