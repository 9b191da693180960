package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// Job is the payload of a job in queue "jobs".
type Job struct {
	N    int    `json:"n"`
	Kind string `json:"kind"` // "plain"; "slow": outlives its lease; "flaky": raises on its first attempt
}

var errLeaseLost = errors.New("lease lost: the job is someone else's now")

// Counters the test reads after the run.
var heartbeats, heartbeatsLost, leasesLost, failed atomic.Int64

// work claims jobs from queue "jobs" until no job is left. It records each job's effect in
// the transaction that acknowledges the job, and hands a job that raised back with ck.fail.
func work(ctx context.Context, db *pgxpool.Pool, worker int) error {
	for {
		var id, token int64
		var attempt int
		var job Job
		err := db.QueryRow(ctx, `SELECT id, lease_token, attempts, payload
		                         FROM ck.claim_wait('jobs', lease => '1 second', max_wait => '200 ms')`).
			Scan(&id, &token, &attempt, &job)
		if errors.Is(err, pgx.ErrNoRows) { // nothing ready within 200 ms: stop once no job is left at all
			var left int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&left); err != nil || left == 0 {
				return err
			}
			continue
		} else if err != nil {
			return err
		}
		started := time.Now()
		if err := process(ctx, db, id, token, job, attempt); errors.Is(err, errLeaseLost) {
			leasesLost.Add(1)
			continue
		} else if err != nil { // the job raised: 'retry' (ready again in 100 ms) or 'dead' (last attempt)
			failed.Add(1)
			err = db.BeginFunc(ctx, func(tx pgx.Tx) error {
				var outcome string
				if err := tx.QueryRow(ctx, `SELECT ck.fail('jobs', $1, $2, $3, '100 ms')`, id, token, err.Error()).
					Scan(&outcome); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO failures (job_id, attempt, outcome) VALUES ($1, $2, $3)`, id, attempt, outcome)
				return err
			})
			if sqlstate(err) == "CK005" { // the lease was lost: the job is someone else's now
				leasesLost.Add(1)
			} else if err != nil {
				return err
			}
			continue
		}
		// The effect and the acknowledgement (with a result, kept in the history) in one transaction: it
		// commits only while the lease is ours.
		err = db.BeginFunc(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO effects (job_id, n, attempt, worker, held_ms) VALUES ($1, $2, $3, $4, $5)`,
				id, job.N, attempt, worker, time.Since(started).Milliseconds()); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `SELECT ck.complete('jobs', $1, $2, $3)`, id, token,
				map[string]int{"attempt": attempt, "worker": worker})
			return err
		})
		if sqlstate(err) == "CK005" { // the lease was lost: the effect rolled back, the job's new holder records it
			leasesLost.Add(1)
		} else if err != nil {
			return err
		}
	}
}

// process does a job's work. A slow job runs 2.5 s on a 1 s lease: it heartbeats every 250 ms.
func process(ctx context.Context, db *pgxpool.Pool, id, token int64, job Job, attempt int) error {
	switch job.Kind {
	case "flaky":
		if attempt == 1 {
			return fmt.Errorf("job %d failed on attempt %d", job.N, attempt)
		}
	case "slow":
		for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); {
			time.Sleep(250 * time.Millisecond)
			var until *time.Time // NULL: the lease was lost (ck.extend_lease would raise CK005)
			if err := db.QueryRow(ctx, `SELECT ck.try_extend_lease('jobs', $1, $2, '1 second')`, id, token).
				Scan(&until); err != nil {
				return err
			}
			heartbeats.Add(1)
			if until == nil {
				heartbeatsLost.Add(1)
				return errLeaseLost
			}
		}
	}
	return nil
}
