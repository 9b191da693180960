package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// testDependencies: a workflow drained by the workers (its order is checked in SQL by the caller),
// then a cancelled job that buries the jobs after it.
func testDependencies(ctx context.Context, pool *pgxpool.Pool, workers int) {
	n := 100000
	step := func(tx pgx.Tx, name, kind string, after []int64) (id int64, err error) {
		n++
		if id, err = enqueueAfter(ctx, tx, "jobs", Job{N: n, Kind: kind}, after); err != nil {
			return 0, err
		}
		if _, err = tx.Exec(ctx, `INSERT INTO enqueued VALUES ($1, $2, $3)`, id, n, kind); err != nil {
			return 0, err
		}
		_, err = tx.Exec(ctx, `INSERT INTO workflow VALUES ($1, $2, $3)`, id, name, after)
		return id, err
	}
	// A fan-out and a fan-in in one transaction. The root is slow (2.5 s: time enough for idle
	// workers to take a job after it too early); of the 16 after it, one fails once, one is slow.
	err := pool.BeginFunc(ctx, func(tx pgx.Tx) error {
		root, err := step(tx, "root", "slow", []int64{})
		if err != nil {
			return err
		}
		kinds := []string{"flaky", "slow"}
		for len(kinds) < 16 {
			kinds = append(kinds, "plain")
		}
		var fanOut []int64
		for _, kind := range kinds {
			id, err := step(tx, "fan-out", kind, []int64{root})
			if err != nil {
				return err
			}
			fanOut = append(fanOut, id)
		}
		_, err = step(tx, "fan-in", "plain", fanOut)
		return err
	})
	if err != nil {
		tap(false, "go: enqueue the workflow: %v", err)
		return
	}
	drain(ctx, pool, workers, "ran a workflow of 18 jobs (1, 16 after it, 1 after those)")

	if _, err := pool.Exec(ctx, `SELECT ck.create_queue('reports') WHERE to_regclass('reports') IS NULL`); err != nil {
		tap(false, "go: create queue reports: %v", err)
		return
	}
	var load, notify int64
	var outcome, loadReason, notifyReason string
	extract, err := enqueueAfter(ctx, pool, "reports", map[string]string{"step": "extract"}, []int64{})
	if err == nil {
		load, err = enqueueAfter(ctx, pool, "reports", map[string]string{"step": "load"}, []int64{extract})
	}
	if err == nil {
		notify, err = enqueueAfter(ctx, pool, "reports", map[string]string{"step": "notify"}, []int64{load})
	}
	if err == nil {
		outcome, err = cancelJob(ctx, pool, extract)
	}
	if err == nil {
		loadReason, err = deadReason(ctx, pool, "reports", load)
	}
	if err == nil {
		notifyReason, err = deadReason(ctx, pool, "reports", notify)
	}
	cancelled := fmt.Sprintf("dependency %d did not complete: cancelled", extract)
	tap(err == nil && outcome == "cancelled" && loadReason == cancelled &&
		notifyReason == fmt.Sprintf("dependency %d did not complete: %s", load, cancelled),
		"go: ck.cancel of a job buries the job after it and the job after that, each with the reason"+
			" in reports_dead (%q, %q, %v)", loadReason, notifyReason, err)
}
