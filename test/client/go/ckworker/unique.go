package main

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v4/pgxpool"
)

// testUnique: eight producers enqueue one unique key at once, then the job is cancelled waiting
// and, enqueued again, running.
func testUnique(ctx context.Context, pool *pgxpool.Pool, workers int) {
	if _, err := pool.Exec(ctx, `SELECT ck.create_queue('reports') WHERE to_regclass('reports') IS NULL`); err != nil {
		tap(false, "go: create queue reports: %v", err)
		return
	}
	type result struct {
		id       int64
		inserted bool
		err      error
	}
	got := make([]result, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			id, inserted, err := enqueueOnce(ctx, pool, "report:2026-12", map[string]int{"by": w})
			got[w] = result{id, inserted, err}
		}(w)
	}
	wg.Wait()
	ids, inserts, errs := map[int64]bool{}, 0, 0
	var id int64
	for _, r := range got {
		if r.err != nil {
			errs++
			note("producer: %v", r.err)
			continue
		}
		ids[r.id], id = true, r.id
		if r.inserted {
			inserts++
		}
	}
	tap(errs == 0 && len(ids) == 1 && inserts == 1,
		"go: %d producers enqueue one unique key at once: one job inserted, every producer got its id", workers)
	first, err1 := cancelJob(ctx, pool, id)
	second, err2 := cancelJob(ctx, pool, id)
	tap(err1 == nil && err2 == nil && first == "cancelled" && second == "gone",
		"go: ck.cancel of the waiting job says 'cancelled', then 'gone' (%s, %s)", first, second)
	id, inserted, err := enqueueOnce(ctx, pool, "report:2026-12", map[string]string{"by": "again"})
	var claimed, token int64
	if err == nil {
		err = pool.QueryRow(ctx, `SELECT id, lease_token FROM ck.claim('reports')`).Scan(&claimed, &token)
	}
	tap(err == nil && inserted && claimed == id,
		"go: the cancelled job's key is free again: a new job, claimed by a worker (%v)", err)
	outcome, err := cancelJob(ctx, pool, id)
	var held bool
	_, errComplete := pool.Exec(ctx, `SELECT ck.complete('reports', $1, $2)`, claimed, token)
	if err == nil {
		err = pool.QueryRow(ctx, `SELECT ck.try_complete('reports', $1, $2)`, claimed, token).Scan(&held)
	}
	tap(err == nil && outcome == "cancelling" && sqlstate(errComplete) == "CK005" &&
		classify(ctx, pool, errComplete) == "conflict" && !held,
		"go: cancelling the running job says %s; its worker's ck.complete raises CK005, a conflict (%v), "+
			"and ck.try_complete returns false (%v)", "'cancelling'", errComplete, err)
}
