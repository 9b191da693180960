// A concurrency_kit worker in Go (pgx v4): 4 goroutines take jobs from queue "emails" and record
// each in table "sent" in the transaction that completes it. It connects with the PG* environment
// variables and stops once the queue is empty. Build it with Debian's packages (GOPATH mode,
// nothing downloaded), in a directory holding only this file:
//
//	apt-get install golang-go golang-github-jackc-pgx-v4-dev
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o worker main.go
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// send is the job's work (here only a check). An error hands the job back.
func send(to string) error {
	if !strings.Contains(to, "@") {
		return fmt.Errorf("bad address %q", to)
	}
	return nil
}

// work claims jobs until the queue is empty and returns how many it sent.
func work(ctx context.Context, db *pgxpool.Pool) (int, error) {
	sent := 0
	for {
		var id, token int64
		var attempts int
		var email struct{ To string } // the payload, {"to": ...}
		err := db.QueryRow(ctx, `SELECT id, lease_token, attempts, payload
			FROM ck.claim_wait('emails', max_wait => '1 second')`).Scan(&id, &token, &attempts, &email)
		if errors.Is(err, pgx.ErrNoRows) { // nothing ready for 1 s: stop if the queue is empty
			var empty bool
			if err := db.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM emails)`).Scan(&empty); err != nil || empty {
				return sent, err
			}
			continue
		} else if err != nil {
			return sent, err
		}
		if err := send(email.To); err != nil { // 'retry' after a backoff, 'dead' after max_attempts, NULL if lost
			if _, err := db.Exec(ctx, `SELECT ck.try_fail('emails', $1, $2, $3)`, id, token, err.Error()); err != nil {
				return sent, err
			}
			continue
		}
		err = db.BeginFunc(ctx, func(tx pgx.Tx) error { // the effect and the acknowledgement commit together
			_, err := tx.Exec(ctx, `INSERT INTO sent (job_id, recipient, attempts) VALUES ($1, $2, $3)`, id, email.To, attempts)
			if err == nil {
				_, err = tx.Exec(ctx, `SELECT ck.complete('emails', $1, $2)`, id, token)
			}
			return err
		})
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "CK005" { // lease lost: the job's new holder records it
			continue
		} else if err != nil {
			return sent, err
		}
		sent++
	}
}

func main() {
	ctx := context.Background()
	// statement_cache_mode=describe: no prepared statements kept on the server, so it also runs
	// behind PgBouncer in transaction pooling mode. Host, database and user come from PG*.
	db, err := pgxpool.Connect(ctx, "statement_cache_mode=describe pool_max_conns=4")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// Set-up, once, before the workers start.
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS sent (job_id bigint PRIMARY KEY, recipient text NOT NULL,
			attempts int NOT NULL, sent_at timestamptz NOT NULL DEFAULT now());
		SELECT ck.create_queue('emails') WHERE to_regclass('emails') IS NULL`); err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 1; w <= 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			sent, err := work(ctx, db)
			if err != nil {
				log.Fatalf("worker %d: %v", w, err) // ends the program
			}
			fmt.Printf("worker %d: %d sent\n", w, sent)
		}(w)
	}
	wg.Wait()
}
