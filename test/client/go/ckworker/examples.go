package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// sell takes n units of sku: the new quantity, or an error with SQLSTATE CK001 (not enough) or CK004 (no such sku).
func sell(ctx context.Context, db *pgxpool.Pool, sku, n int) (left int64, err error) {
	err = db.QueryRow(ctx, `SELECT ck.decrement('stock', $1::int, 'qty', $2)`, sku, n).Scan(&left)
	return left, err
}

// classify says what to do about an error: "retry", "busy", "conflict" (tell the user) or "error".
func classify(ctx context.Context, db *pgxpool.Pool, err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return "error"
	}
	var action string
	if db.QueryRow(ctx, `SELECT ck.sqlstate_action($1)`, pgErr.Code).Scan(&action) != nil {
		return "error"
	}
	return action
}

// txStarter is a *pgxpool.Pool, a *pgxpool.Conn, a *pgx.Conn or a pgx.Tx.
type txStarter interface {
	BeginFunc(ctx context.Context, f func(pgx.Tx) error) error
}

// relay runs f in a transaction that holds advisory lock relay:partition. It waits at most
// 500 ms for the lock, then fails with SQLSTATE 55P03 (ck.sqlstate_action: "busy").
func relay(ctx context.Context, db txStarter, partition int, f func(pgx.Tx) error) error {
	return db.BeginFunc(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT ck.xact_lock('relay', $1, '500 ms')`, partition); err != nil {
			return err
		}
		return f(tx) // the lock goes with the transaction
	})
}

// takeSeat books a seat of show 7 for customer while fewer than 20 are taken. ck.retry runs the
// statements in a SERIALIZABLE transaction, again after 40001/40P01; call it outside a transaction.
func takeSeat(ctx context.Context, db *pgxpool.Pool, customer string) (attempts int, err error) {
	sql := fmt.Sprintf(`SELECT pg_sleep(0.01); -- widens the race for the test
		INSERT INTO seats (show_id, customer, attempt)
		SELECT 7, %s, ck.current_attempt() WHERE (SELECT count(*) FROM seats WHERE show_id = 7) < 20`,
		quoteLiteral(customer))
	err = db.QueryRow(ctx, `CALL ck.retry($1, 'serializable', 20)`, sql).Scan(&attempts)
	return attempts, err
}

// enqueueOnce enqueues a job for key unless one is already waiting or running: its id, and
// whether this call inserted it.
func enqueueOnce(ctx context.Context, db *pgxpool.Pool, key string, payload any) (id int64, inserted bool, err error) {
	err = db.QueryRow(ctx, `SELECT id, inserted FROM ck.enqueue_unique('reports', $1, $2::jsonb)`, key, payload).
		Scan(&id, &inserted)
	return id, inserted, err
}

// cancelJob says "cancelled" (it was waiting), "cancelling" (a worker runs it: its next
// acknowledgement finds the lease lost) or "gone".
func cancelJob(ctx context.Context, db *pgxpool.Pool, id int64) (outcome string, err error) {
	err = db.QueryRow(ctx, `SELECT ck.cancel('reports', $1)`, id).Scan(&outcome)
	return outcome, err
}

// queryRower is a *pgxpool.Pool, a *pgxpool.Conn, a *pgx.Conn or a pgx.Tx.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...interface{}) pgx.Row
}

// enqueueAfter enqueues a job that waits until every job in after that is still in the queue has
// completed; if one of them is buried or cancelled instead, so is this job, with the reason.
func enqueueAfter(ctx context.Context, db queryRower, queue string, payload any, after []int64) (id int64, err error) {
	err = db.QueryRow(ctx, `SELECT ck.enqueue($1, $2::jsonb, after => $3)`, queue, payload, after).Scan(&id)
	return id, err
}

// deadReason says why job id is in the queue's dead letters (its last_error); pgx.ErrNoRows while it is not there.
func deadReason(ctx context.Context, db queryRower, queue string, id int64) (reason string, err error) {
	dead := pgx.Identifier{queue + "_dead"}.Sanitize()
	err = db.QueryRow(ctx, `SELECT last_error FROM `+dead+` WHERE id = $1`, id).Scan(&reason)
	return reason, err
}

// quoteLiteral quotes s as an SQL string literal (standard_conforming_strings is on).
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// profile is what an optimistic edit reads of a profile.
type profile struct {
	Visits  int
	Note    string
	Version int64
}

// editProfile is an optimistic read-modify-write of profile id: it reads the row, computes
// change(p), a map of new column values, and writes it with ck.update_if_version. A
// writer in between makes the write stale (CK006, ck.sqlstate_action: "retry"): read again,
// apply again, at most attempts times; any other error is returned at once. It returns the new
// version and the attempts used.
func editProfile(ctx context.Context, db *pgxpool.Pool, id int, change func(profile) map[string]any,
	attempts int) (version int64, used int, err error) {
	for used = 1; used <= attempts; used++ {
		var p profile
		err = db.QueryRow(ctx, `SELECT visits, note, version FROM profiles WHERE id = $1`, id).
			Scan(&p.Visits, &p.Note, &p.Version)
		if err != nil {
			return 0, used, err
		}
		err = db.QueryRow(ctx, `SELECT ck.update_if_version('profiles', $1::int, $2, $3)`,
			id, p.Version, change(p)).Scan(&version)
		if sqlstate(err) != "CK006" {
			return version, used, err
		}
	}
	return 0, attempts, err
}
