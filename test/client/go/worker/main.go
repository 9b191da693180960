// A concurrency_kit worker in Go (pgx v4): 4 goroutines take jobs from queue "emails" and record
// each in table "sent" in the transaction that completes it (with a result). It connects with the
// PG* environment variables and stops once the queue is empty; "worker send bob@example.com" is a
// producer that waits for its job's result. Build it with Debian's packages (GOPATH mode, nothing
// downloaded):
//
//	apt-get install golang-go golang-github-jackc-pgx-v4-dev
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o worker main.go
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// send is the job's work (here only a check); it returns the job's result (jsonb: pgx encodes maps
// and structs with encoding/json). An error hands the job back.
func send(to string) (map[string]string, error) {
	if !strings.Contains(to, "@") {
		return nil, fmt.Errorf("bad address %q", to)
	}
	return map[string]string{"delivered_to": to}, nil
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
		if errors.Is(err, pgx.ErrNoRows) { // nothing ready for 1 s (or paused): stop if the queue is empty
			var empty bool
			if err := db.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM emails)`).Scan(&empty); err != nil || empty {
				return sent, err
			}
			continue
		} else if err != nil {
			return sent, err
		}
		result, err := send(email.To)
		if err != nil { // 'retry' after a backoff, 'dead' after max_attempts, NULL if lost
			if _, err := db.Exec(ctx, `SELECT ck.try_fail('emails', $1, $2, $3)`, id, token, err.Error()); err != nil {
				return sent, err
			}
			continue
		}
		err = db.BeginFunc(ctx, func(tx pgx.Tx) error { // the effect and the acknowledgement (with the result) commit together
			_, err := tx.Exec(ctx, `INSERT INTO sent (job_id, recipient, attempts) VALUES ($1, $2, $3)`, id, email.To, attempts)
			if err == nil {
				_, err = tx.Exec(ctx, `SELECT ck.complete('emails', $1, $2, $3)`, id, token, result)
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

// request is a producer: it enqueues an email and waits (up to 30 s) until a worker has finished it.
func request(ctx context.Context, db *pgxpool.Pool, to string) error {
	var id int64
	var state, failure string
	var result map[string]string
	err := db.QueryRow(ctx, `SELECT ck.enqueue('emails', $1)`, map[string]string{"to": to}).Scan(&id)
	if err == nil {
		err = db.QueryRow(ctx, `SELECT state, result, coalesce(error, '') FROM ck.await_job('emails', $1, '30 seconds')`,
			id).Scan(&state, &result, &failure)
	}
	if err == nil && state == "completed" {
		fmt.Printf("job %d: completed delivered to %s\n", id, result["delivered_to"])
	} else if err == nil { // buried or cancelled (with its error), or still waiting or running after 30 s
		fmt.Printf("job %d: %s %s\n", id, state, failure)
	}
	return err
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
	if len(os.Args) == 3 && os.Args[1] == "send" { // a producer, not the workers
		if err := request(ctx, db, os.Args[2]); err != nil {
			log.Fatal(err)
		}
		return
	}
	// Set-up, once, before the workers start.
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS sent (job_id bigint PRIMARY KEY, recipient text NOT NULL,
			attempts int NOT NULL, sent_at timestamptz NOT NULL DEFAULT now());
		SELECT ck.create_queue('emails') WHERE to_regclass('emails') IS NULL;
		-- Keep finished jobs, with their results, 7 days (run ck.maintain_history('emails') hourly).
		SELECT ck.set_history('emails', '7 days') WHERE to_regclass('emails_history') IS NULL`); err != nil {
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
