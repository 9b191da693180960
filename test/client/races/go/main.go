// The race programs in Go (pgx v4): the guide's examples written naively and written correctly,
// run by test/client/race_programs.sh against test/client/races/setup.sql; a port of
// test/client/races/programs.py, with the same programs, SQL texts and output.
//
//	cd test/client/races/go && GO111MODULE=off GOPROXY=off GOFLAGS='' GOPATH=/usr/share/gocode go build -o programs .
//	./programs PROGRAM CLIENTS TRANSACTIONS
//
// Each of CLIENTS connections (the PG* environment variables) sets ck.race_detector = 'warning' and
// runs TRANSACTIONS transactions of PROGRAM; the output is one line: "transactions=N reports=M
// errors=E", where reports counts the warnings with SQLSTATE CK008 the clients received and errors
// the transactions that failed (serialization failures and deadlocks of the correct programs are
// retried, not counted).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
)

// programs: the naive ones (stock, seats, transfer, optimistic), then the correct ones.
var programs = map[string]func(context.Context, *pgx.Conn) error{
	"stock":         stock,
	"seats":         seats,
	"transfer":      transfer,
	"optimistic":    optimistic,
	"atomic":        atomic,
	"locked":        locked,
	"try_decrement": tryDecrement,
	"if_version":    ifVersion,
	"serializable":  serializable,
}

// inTransaction runs f between BEGIN and COMMIT; ROLLBACK if it fails.
func inTransaction(ctx context.Context, conn *pgx.Conn, f func(pgx.Tx) error) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// last20 is Python's s[-20:].
func last20(s string) string {
	r := []rune(s)
	if len(r) > 20 {
		r = r[len(r)-20:]
	}
	return string(r)
}

// stock reads the stock, decides in the application, writes the value computed there.
func stock(ctx context.Context, conn *pgx.Conn) error {
	return inTransaction(ctx, conn, func(tx pgx.Tx) error {
		var qty int64
		if err := tx.QueryRow(ctx, "SELECT qty FROM stock WHERE id = 1").Scan(&qty); err != nil {
			return err
		}
		if qty > 0 {
			if _, err := tx.Exec(ctx, "UPDATE stock SET qty = $1 WHERE id = 1", qty-1); err != nil {
				return err
			}
		}
		return nil
	})
}

func seats(ctx context.Context, conn *pgx.Conn) error {
	return inTransaction(ctx, conn, func(tx pgx.Tx) error {
		var left int64
		if err := tx.QueryRow(ctx, "SELECT seats_left FROM shows WHERE id = 1").Scan(&left); err != nil {
			return err
		}
		if left > 0 {
			if _, err := tx.Exec(ctx, "UPDATE shows SET seats_left = $1 WHERE id = 1", left-1); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "INSERT INTO tickets (show_id) VALUES (1)"); err != nil {
				return err
			}
		}
		return nil
	})
}

func transfer(ctx context.Context, conn *pgx.Conn) error {
	return inTransaction(ctx, conn, func(tx pgx.Tx) error {
		var a, b int64
		if err := tx.QueryRow(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&a); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT balance FROM accounts WHERE id = 2").Scan(&b); err != nil {
			return err
		}
		if a >= 1 {
			if _, err := tx.Exec(ctx, "UPDATE accounts SET balance = $1 WHERE id = 1", a-1); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "UPDATE accounts SET balance = $1 WHERE id = 2", b+1); err != nil {
				return err
			}
		}
		return nil
	})
}

// optimistic is "optimistic", but the version read is only written back, never checked.
func optimistic(ctx context.Context, conn *pgx.Conn) error {
	return inTransaction(ctx, conn, func(tx pgx.Tx) error {
		var body string
		var version int64
		if err := tx.QueryRow(ctx, "SELECT body, version FROM docs WHERE id = 1").Scan(&body, &version); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE docs SET body = $1, version = $2 WHERE id = 1", last20(body)+"x", version+1)
		return err
	})
}

func atomic(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, "UPDATE stock SET qty = qty - 1 WHERE id = 1 AND qty > 0")
	return err
}

func locked(ctx context.Context, conn *pgx.Conn) error {
	return inTransaction(ctx, conn, func(tx pgx.Tx) error {
		var qty int64
		if err := tx.QueryRow(ctx, "SELECT qty FROM stock WHERE id = 1 FOR NO KEY UPDATE").Scan(&qty); err != nil {
			return err
		}
		if qty > 0 {
			if _, err := tx.Exec(ctx, "UPDATE stock SET qty = $1 WHERE id = 1", qty-1); err != nil {
				return err
			}
		}
		return nil
	})
}

func tryDecrement(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, "SELECT ck.try_decrement('stock', 1, 'qty')")
	return err
}

func ifVersion(ctx context.Context, conn *pgx.Conn) error {
	for {
		var newVersion *int64
		err := inTransaction(ctx, conn, func(tx pgx.Tx) error {
			var body string
			var version int64
			if err := tx.QueryRow(ctx, "SELECT body, version FROM docs WHERE id = 1").Scan(&body, &version); err != nil {
				return err
			}
			return tx.QueryRow(ctx,
				"SELECT ck.try_update_if_version('docs', 1, $1, jsonb_build_object('body', $2::text))",
				version, last20(body)+"x").Scan(&newVersion)
		})
		if err != nil {
			return err
		}
		if newVersion != nil { // NULL: the row changed since the read; read again
			return nil
		}
	}
}

func serializable(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, "CALL ck.retry('SELECT transfer(1, 2, 1)', 'serializable', 100)")
	return err
}

// sqlstate is the SQLSTATE of a server error, "" for any other error.
func sqlstate(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

type totals struct {
	sync.Mutex
	transactions, reports, errors int
}

// client runs the transactions of one connection and adds its counts to t. Like a Python thread
// that raised, a client that cannot connect reports why and adds nothing.
func client(ctx context.Context, run func(context.Context, *pgx.Conn) error, transactions int, t *totals) {
	reports, errs := 0, 0
	config, err := pgx.ParseConfig("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "config:", err)
		return
	}
	// Called on the connection's own goroutine, while one of its statements runs.
	config.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if n.Code == "CK008" {
			reports++
		}
	}
	conn, err := pgx.ConnectConfig(ctx, config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET ck.race_detector = 'warning'"); err != nil {
		fmt.Fprintf(os.Stderr, "SET ck.race_detector: %v (SQLSTATE %s)\n", err, sqlstate(err))
		return
	}
	for i := 0; i < transactions; i++ {
		if err := run(ctx, conn); err != nil {
			errs++
		}
	}
	t.Lock()
	defer t.Unlock()
	t.transactions += transactions
	t.reports += reports
	t.errors += errs
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: programs PROGRAM CLIENTS TRANSACTIONS")
		os.Exit(2)
	}
	program := os.Args[1]
	clients, err1 := strconv.Atoi(os.Args[2])
	transactions, err2 := strconv.Atoi(os.Args[3])
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "usage: programs PROGRAM CLIENTS TRANSACTIONS")
		os.Exit(2)
	}
	run, known := programs[program]
	if !known {
		fmt.Fprintln(os.Stderr, "unknown program "+program)
		os.Exit(1)
	}
	ctx := context.Background()
	var t totals
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client(ctx, run, transactions, &t)
		}()
	}
	wg.Wait()
	fmt.Printf("transactions=%d reports=%d errors=%d\n", t.transactions, t.reports, t.errors)
}
