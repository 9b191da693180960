// The SQL of every queue statement, built once per backend and queue from the queue's row
// in ck.queues. Identifiers are quoted; values are parameters.
#include "base/boundary.hpp"
#include "base/qualify.hpp"
#include "queue/store/statements.hpp"
#include "queue/store/plans.hpp"
#include "base/relation.hpp"
#include "base/shared_memory.hpp"
#include "base/spi.hpp"
#include "rate/window.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/dependency.h"
#include "catalog/pg_depend.h"
#include "storage/bufmgr.h"
#include "utils/timestamp.h"
}

#include <stdexcept>

namespace ck {

namespace {

struct QueueRow {
    bool found;
    Oid dead_letters;
    Interval lease;
    int32 max_attempts;
    bool paused;
    bool timed;         // a timeout is set (1.1.0)
    Interval timeout;
    Oid history;   // InvalidOid: no history
};

// The one statement of the queue's settings, shared by every queue (hence not a QueueStatement).
enum class SettingsStatement : uint8_t { QueueRow };

QueueRow read_queue_row(Oid relid)
{
    PlanKey key(SettingsStatement::QueueRow, InvalidOid, InvalidOid, "", nullptr);
    const Prepared &p = prepare_once(key, [] {
        Prepared config;
        Oid types[1] = {REGCLASSOID};
        config.plan = pg_call([&] {
            // paused_at, timeout and the history (1.1.0) read through the row's jsonb: the library
            // may be newer than the installed SQL objects (until ALTER EXTENSION ... UPDATE, which
            // a session may span), and a column they lack reads as NULL. (The history's name is
            // printed and read back with one search_path: the same table.)
            return prepare_kept("SELECT q.dead_letters, q.lease, q.max_attempts,"
                                " (r.j OPERATOR(pg_catalog.->>) 'paused_at') IS NOT NULL,"
                                " (r.j OPERATOR(pg_catalog.->>) 'timeout')::pg_catalog.interval,"
                                " CASE WHEN (r.j OPERATOR(pg_catalog.->>) 'history_retention') IS NOT NULL"
                                " THEN (r.j OPERATOR(pg_catalog.->>) 'history')::pg_catalog.regclass END"
                                " FROM ck.queues AS q, LATERAL (SELECT pg_catalog.to_jsonb(q) AS j) AS r"
                                " WHERE q.queue OPERATOR(pg_catalog.=) $1",
                                1, types);
        });
        return config;
    });
    Datum values[1] = {ObjectIdGetDatum(relid)};
    QueueRow row{};
    // The latest snapshot, not the calling statement's: settings read after an invalidation must
    // include the commit that sent it (a pause, signal/pause.hpp), or they would be cached stale.
    // In parallel mode (a PARALLEL RESTRICTED function in the leader: queue_stats, claim_path)
    // PostgreSQL takes no new snapshot; no claim runs there (claims are PARALLEL UNSAFE).
    Snap snap = IsInParallelMode() ? Snap::ReadOnly : Snap::Latest;
    if (execute_plan(p.plan, values, nullptr, snap) == 0)
        return row;
    bool isnull;
    row.found = true;
    row.dead_letters = DatumGetObjectId(result_datum(0, 1, &isnull));
    row.lease = *DatumGetIntervalP(result_datum(0, 2, &isnull));
    row.max_attempts = DatumGetInt32(result_datum(0, 3, &isnull));
    row.paused = DatumGetBool(result_datum(0, 4, &isnull));
    Datum timeout = result_datum(0, 5, &isnull);
    row.timed = !isnull;
    if (row.timed)
        row.timeout = *DatumGetIntervalP(timeout);
    Datum history = result_datum(0, 6, &isnull);
    row.history = isnull ? InvalidOid : DatumGetObjectId(history);
    return row;
}

// One statement's SQL, parameter types and planner options.
struct Statement {
    std::string sql;
    Oid types[8];
    int nargs;
    int cursor_options;
    bool by_id = false;   // reads the queue's rows by id only (plans.hpp)
};

// Leases and retry times count from the moment of the call ($n = the current time, not
// now(), which is frozen at transaction start: a claim_wait would never see jobs enqueued
// while it waits, and a lease taken late in a long transaction would start in the past).
// The claim's plan is kept generic: with LIMIT $1 the planner would otherwise plan every
// call afresh.
constexpr int generic_fast = CURSOR_OPT_GENERIC_PLAN | CURSOR_OPT_FAST_PLAN;
// Statements that find their jobs by id keep the generic plan store/plans.cpp makes with only the
// indexes that start with id: planned from statistics that saw the queue empty (an ANALYZE,
// manual or automatic, while a big insert was not yet committed), a lookup by id walked the
// whole claim index (id is its last column) at every call.
constexpr int by_id_generic = CURSOR_OPT_GENERIC_PLAN;

// Acknowledgements test the token with "(lease_token = $2) IS TRUE": a bare
// "lease_token = $2" would let the planner prove lease_token IS NOT NULL and pick the small
// partial index of leased jobs over the primary key, scanning every leased job.
// Every operator is schema-qualified (CK_OP, see qualify.hpp), and so is every function and
// type: the statements run with the caller's search_path.
#define EQ CK_OP("=")
Statement statement_for(QueueStatement kind, const std::string &q, const std::string &dead, bool has_dependencies,
                        bool has_timeout, bool timed, const std::string &hist = "", Oid sequence = InvalidOid)
{
    // With a history (ck.set_history), the statement that removes a job also records it there
    // (rows of a CTE named `from` with the job's columns): exactly once, in the same transaction.
    // The "same statement" rule is why each such kind has two texts, chosen when it is planned.
    auto record = [&](const char *from, const char *state, const std::string &error, const std::string &result) {
        return hist.empty() ? std::string() :
            ", recorded AS (INSERT INTO " + hist + " (id, state, attempts, error, result, payload, enqueued_at, finished_at)"
            " SELECT r.id, '" + state + "', r.attempts, " + error + ", " + result + ", r.payload, r.enqueued_at,"
            " pg_catalog.clock_timestamp() FROM " + from + " AS r)";
    };
    const std::string now = "pg_catalog.now()";
    // Job timeouts (engine/timeout.cpp): a queue's table with the column timeout_at (1.1.0) has
    // acknowledgements refused once the attempt's timeout has passed, and a queue with a timeout
    // set has claims pass over the jobs that reached it (lease end = timeout_at: theirs to time
    // out). Queues without the column run the statements as before; one with it but no timeout
    // pays a NULL test in those acknowledgements and a NULL the claim writes ($8).
    const std::string in_time = has_timeout ? " AND (timeout_at IS NULL OR timeout_at" CK_OP(">")
                                              "pg_catalog.clock_timestamp())" : "";
    const std::string not_timed_out = timed ? " AND (timeout_at IS NULL OR lease_token IS NULL OR run_at" CK_OP("<")
                                              "timeout_at)" : "";
    const std::string token_is = "(lease_token" EQ "$2) IS TRUE" + in_time;
    // The queue's distinct priorities, one index probe each (a loose scan of the claim index).
    const std::string priorities = "WITH RECURSIVE priorities AS ("
        "  (SELECT priority FROM " + q + " ORDER BY priority LIMIT 1)"
        "  UNION ALL"
        "  SELECT (SELECT priority FROM " + q + " WHERE priority" CK_OP(">") "p.priority ORDER BY priority LIMIT 1)"
        "  FROM priorities AS p WHERE p.priority IS NOT NULL"
        ")";
    switch (kind) {
    case QueueStatement::Enqueue:
        return {"INSERT INTO " + q + " (payload, run_at, priority) VALUES ($1, $2, $3) RETURNING id",
                {JSONBOID, TIMESTAMPTZOID, INT4OID}, 3, 0};
    // With a concurrency key, parked ($5 not NULL: run_at is then 'infinity') or not.
    case QueueStatement::EnqueueKeyed:
        return {"INSERT INTO " + q + " (payload, run_at, priority, concurrency_key, parked_run_at)"
                " VALUES ($1, $2, $3, $4, $5) RETURNING id",
                {JSONBOID, TIMESTAMPTZOID, INT4OID, TEXTOID, TIMESTAMPTZOID}, 5, 0};
    case QueueStatement::EnqueueUnique:
        // ON CONFLICT DO NOTHING waits for a transaction still inserting the key and decides
        // on its outcome, so a key never goes to two jobs and a rolled-back holder frees it.
        return {"INSERT INTO " + q + " (payload, run_at, priority, unique_key, concurrency_key, parked_run_at)"
                " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING RETURNING id",
                {JSONBOID, TIMESTAMPTZOID, INT4OID, TEXTOID, TEXTOID, TIMESTAMPTZOID}, 6, 0};
    case QueueStatement::FindUnique:
        return {"SELECT id FROM " + q + " WHERE unique_key" EQ "$1", {TEXTOID}, 1, 0};
    // A key's window ($1 queue, $2 key): taken when it has no row or its window has ended ($4 is
    // the moment); ON CONFLICT waits for a transaction still taking it and decides on its outcome.
    case QueueStatement::WindowTake:
        return {"INSERT INTO ck.unique_windows AS w (queue, unique_key, until) VALUES ($1, $2, $3)"
                " ON CONFLICT (queue, unique_key) DO UPDATE SET until = EXCLUDED.until, job = NULL"
                " WHERE w.until" CK_OP("<=") "$4 RETURNING true",
                {REGCLASSOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID}, 4, 0};
    // The join (which the planner removes) asks for SELECT on the queue, as a duplicate found
    // in the queue itself would: the windows alone must not tell a job's id to whoever may insert.
    case QueueStatement::WindowHolder:
        return {"SELECT w.job FROM ck.unique_windows AS w LEFT JOIN " + q + " AS j ON j.id" EQ "w.job"
                " WHERE w.queue" EQ "$1 AND w.unique_key" EQ "$2",
                {REGCLASSOID, TEXTOID}, 2, 0};
    case QueueStatement::WindowSetJob:
        return {"UPDATE ck.unique_windows SET job = $3 WHERE queue" EQ "$1 AND unique_key" EQ "$2",
                {REGCLASSOID, TEXTOID, INT8OID}, 3, 0};
    // Concurrency limits ($1 queue, $2 key; rules/limits.cpp). The slot row is made at the
    // key's limit (its own, else the queue's default) the first time a limited key is seen, and
    // locked with FOR UPDATE, which writes no new row version (an ON CONFLICT DO UPDATE that
    // only locks would leave one behind at every enqueue).
    case QueueStatement::SlotCreate:
        return {"INSERT INTO ck.concurrency_slots (queue, concurrency_key, free)"
                " SELECT $1, $2, l.max_running FROM ck.concurrency_limits AS l WHERE l.queue" EQ "$1"
                "   AND (l.concurrency_key" EQ "$2 OR l.concurrency_key IS NULL) ORDER BY l.concurrency_key IS NULL LIMIT 1"
                " ON CONFLICT (queue, concurrency_key) DO NOTHING",
                {REGCLASSOID, TEXTOID}, 2, 0};
    case QueueStatement::SlotPeek:
        return {"SELECT free FROM ck.concurrency_slots WHERE queue" EQ "$1 AND concurrency_key" EQ "$2",
                {REGCLASSOID, TEXTOID}, 2, 0};
    case QueueStatement::SlotLock:
        return {"SELECT free FROM ck.concurrency_slots WHERE queue" EQ "$1 AND concurrency_key" EQ "$2 FOR UPDATE",
                {REGCLASSOID, TEXTOID}, 2, 0};
    case QueueStatement::SlotDecrement:
        return {"UPDATE ck.concurrency_slots SET free = free" CK_OP("-") "1 WHERE queue" EQ "$1 AND concurrency_key" EQ "$2",
                {REGCLASSOID, TEXTOID}, 2, 0};
    case QueueStatement::SlotIncrement:
        return {"UPDATE ck.concurrency_slots SET free = free" CK_OP("+") "1 WHERE queue" EQ "$1 AND concurrency_key" EQ "$2",
                {REGCLASSOID, TEXTOID}, 2, 0};
    case QueueStatement::Park:
        return {"UPDATE " + q + " SET parked_run_at = COALESCE(parked_run_at, run_at),"
                " run_at = 'infinity'::pg_catalog.timestamptz WHERE id" EQ "$1",
                {INT8OID}, 1, by_id_generic, true};
    case QueueStatement::HandOver:
        // The oldest parked job of key $1 takes a departed job's slot, if the key's slot row ($3 the
        // queue) has free >= 0; the row is only read: this changes no count (rules/limits.cpp).
        // No row: no limit, free < 0 after a limit was lowered, or no parked job. Another
        // transaction's lock on a parked job (it is cancelling it) is skipped. The job is ready from
        // the moment it gets the slot ($2), or later at its own run_at: back at its enqueue time it
        // would sit below the claim frontier among the dead entries of every job claimed since, and
        // lower the frontier there for every claim. The slot test is a one-time filter, checked
        // before the pick, and the job is updated where the pick locked it, not looked up by id
        // again (a plan of 7 nodes, 2 index scans: it runs at every departure of a limited key).
        // A job the pick locked in a version newer than the statement's snapshot is not updated:
        // no row, and the locked way that follows finds it again. Where nothing but the update
        // itself would happen (no user trigger, no row security...), rules/handover.cpp does the
        // same with the access methods, without a statement.
        // (A job still waiting for its dependencies is parked too, and not the key's to move.)
        return {"UPDATE " + q + " AS j SET run_at = GREATEST(j.parked_run_at, $2), parked_run_at = NULL WHERE j.ctid" EQ "("
                "SELECT p.ctid FROM " + q + " AS p WHERE p.concurrency_key" EQ "$1 AND p.parked_run_at IS NOT NULL" +
                (has_dependencies ? " AND p.waiting_for IS NULL" : "") +
                " ORDER BY p.priority, p.parked_run_at, p.id LIMIT 1 FOR UPDATE SKIP LOCKED)"
                " AND (SELECT s.free FROM ck.concurrency_slots AS s WHERE s.queue" EQ "$3 AND s.concurrency_key" EQ "$1)"
                CK_OP(">=") "0 RETURNING j.priority, j.run_at, j.id",
                {TEXTOID, TIMESTAMPTZOID, REGCLASSOID}, 3, by_id_generic, false};
    // A parked job by id, ready from its own run_at or $2 if later: a dependant whose last
    // dependency completed and which got its key's slot, or a job placed by a wrong guess.
    case QueueStatement::UnparkJob:
        return {"UPDATE " + q + " SET run_at = GREATEST(parked_run_at, $2), parked_run_at = NULL"
                " WHERE id" EQ "$1 AND parked_run_at IS NOT NULL RETURNING priority, run_at, id",
                {INT8OID, TIMESTAMPTZOID}, 2, by_id_generic, true};
    case QueueStatement::WindowPurge:
        // Windows that have ended are kept only until a later windowed enqueue of the queue
        // removes them, a few at a time, skipping any another enqueue is taking again.
        return {"DELETE FROM ck.unique_windows WHERE ctid" EQ "ANY (ARRAY("
                "SELECT ctid FROM ck.unique_windows WHERE queue" EQ "$1 AND until" CK_OP("<=") "$2"
                " ORDER BY until LIMIT 8 FOR UPDATE SKIP LOCKED))",
                {REGCLASSOID, TIMESTAMPTZOID}, 2, 0};
    case QueueStatement::Cancel:
        // The job as it was goes to the dead letters; whether its lease was still valid says
        // whether a worker may be running it.
        return {"WITH gone AS (DELETE FROM " + q + " WHERE id" EQ "$1 RETURNING *), dead AS ("
                "INSERT INTO " + dead + " (id, job, attempts, last_error) "
                "SELECT g.id, pg_catalog.to_jsonb(g), g.attempts, 'cancelled' FROM gone AS g)" +
                record("gone", "cancelled", "'cancelled'", "NULL") +
                " SELECT lease_token IS NOT NULL AND run_at" CK_OP(">") "$2, priority, run_at FROM gone",
                {INT8OID, TIMESTAMPTZOID}, 2, by_id_generic, true};
    // Dependencies (rules/dependencies.cpp). A waiting job is parked at 'infinity' with its own
    // run_at kept, as a job held back by its concurrency key is; it takes no slot until ready.
    case QueueStatement::EnqueueWaiting:
        return {"INSERT INTO " + q + " (payload, run_at, priority, unique_key, concurrency_key, parked_run_at, waiting_for)"
                " VALUES ($1, 'infinity'::pg_catalog.timestamptz, $3, $4, $5, $2, $6)"
                " ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING RETURNING id",
                {JSONBOID, TIMESTAMPTZOID, INT4OID, TEXTOID, TEXTOID, INT4OID}, 6, 0};
    case QueueStatement::DepLock:
        return {"SELECT id, priority, run_at, has_dependants FROM " + q + " WHERE id" EQ "ANY ($1) ORDER BY id FOR KEY SHARE",
                {INT8ARRAYOID}, 1, by_id_generic, true};
    case QueueStatement::DepMark:
        return {"UPDATE " + q + " SET has_dependants = true WHERE id" EQ "ANY ($1) AND has_dependants IS NULL",
                {INT8ARRAYOID}, 1, by_id_generic, true};
    case QueueStatement::DepDead:
        return {"SELECT id, last_error FROM " + dead + " WHERE id" EQ "ANY ($1) ORDER BY id LIMIT 1", {INT8ARRAYOID}, 1, 0};
    case QueueStatement::DepEdges:
        return {"INSERT INTO ck.job_dependencies (queue, job, dependant) SELECT $1, d.job, $3 FROM pg_catalog.unnest($2) AS d(job)",
                {REGCLASSOID, INT8ARRAYOID, INT8OID}, 3, 0};
    case QueueStatement::DepDeparted:
        return {"INSERT INTO ck.dependency_departures AS d (queue, job, failure) VALUES ($1, $2, $3)"
                " ON CONFLICT (queue, job) DO UPDATE SET failure = EXCLUDED.failure",
                {REGCLASSOID, INT8OID, TEXTOID}, 3, 0};
    case QueueStatement::DepNext:
        return {"SELECT job, failure FROM ck.dependency_departures WHERE queue" EQ "$1 ORDER BY job LIMIT 1 FOR UPDATE SKIP LOCKED",
                {REGCLASSOID}, 1, 0};
    case QueueStatement::DepAny:
        return {"SELECT FROM ck.dependency_departures WHERE queue" EQ "$1 LIMIT 1", {REGCLASSOID}, 1, 0};
    case QueueStatement::DepTake:
        return {"DELETE FROM ck.job_dependencies WHERE ctid" EQ "ANY (ARRAY("
                "SELECT ctid FROM ck.job_dependencies WHERE queue" EQ "$1 AND job" EQ "$2 ORDER BY dependant LIMIT $3)) RETURNING dependant",
                {REGCLASSOID, INT8OID, INT4OID}, 3, 0};
    case QueueStatement::DepDone:
        return {"DELETE FROM ck.dependency_departures WHERE queue" EQ "$1 AND job" EQ "$2", {REGCLASSOID, INT8OID}, 2, 0};
    case QueueStatement::DepRelease: {
        // $1 sorted: dependants are locked in id order by every release (no deadlock between
        // two), each looked up by id (the join of CompleteMany, planned the same way). A dependant without a concurrency key is ready at zero, from now or its own
        // run_at; one with a key still has to get a slot (rules/dependencies.cpp).
        const std::string last = "j.waiting_for" EQ "1 AND j.concurrency_key IS NULL";
        return {"UPDATE " + q + " AS j SET waiting_for = CASE WHEN j.waiting_for" CK_OP(">") "1 THEN j.waiting_for"
                CK_OP("-") "1 END, run_at = CASE WHEN " + last + " THEN GREATEST(j.parked_run_at, $2) ELSE j.run_at END,"
                " parked_run_at = CASE WHEN " + last + " THEN NULL ELSE j.parked_run_at END"
                " FROM pg_catalog.unnest($1) AS d(id) WHERE j.id" EQ "ANY (ARRAY[d.id]) AND j.waiting_for IS NOT NULL"
                " RETURNING j.priority, j.run_at, j.id, j.waiting_for IS NULL, j.parked_run_at IS NOT NULL, j.concurrency_key",
                {INT8ARRAYOID, TIMESTAMPTZOID}, 2, 0};
    }
    case QueueStatement::DepBury:
        return {"WITH gone AS (DELETE FROM " + q + " AS j USING pg_catalog.unnest($1) AS d(id)"
                " WHERE j.id" EQ "ANY (ARRAY[d.id]) AND j.waiting_for IS NOT NULL RETURNING j.*), dead AS ("
                "INSERT INTO " + dead + " (id, job, attempts, last_error) "
                "SELECT g.id, pg_catalog.to_jsonb(g), g.attempts, $2 FROM gone AS g)" + record("gone", "buried", "$2", "NULL") +
                " SELECT pg_catalog.count(*) FROM gone",
                {INT8ARRAYOID, TEXTOID}, 2, 0};
    case QueueStatement::Claim:
    case QueueStatement::ClaimFrom:
    case QueueStatement::ClaimFromOne: {
        // One statement: pick ready jobs in order, skipping rows other claimers hold, and
        // lease them. run_at becomes the lease end, so an expired lease is ready again. Each
        // row also returns the key it was claimed at (its old priority and run_at) and the
        // xmin of that version, which the frontier needs (engine/claim.cpp, take_claimed). ClaimFrom
        // reads the known priorities in order ($5), each from its frontier ($6, $7), in one
        // statement: a nested loop over the arrays, each priority one index descent, which
        // stops once the batch is full. With the priority fixed, run_at <= $4 ends a priority's
        // scan, and the row comparison starts it at (run_at, id) itself (not at the first of
        // many jobs enqueued with one run_at). ClaimFromOne is the same for one priority ($5,
        // $6, $7 scalars), without the loop: a few microseconds less for the usual queue. The picked rows are a
        // MATERIALIZED CTE, run once, and the update finds them by id in a nested loop: as a
        // subquery, a plan made after an ANALYZE of a bloated queue put the pick on the inner
        // side of a nested loop and ran it again for every row of the table. The join is
        // "j.id = ANY (ARRAY[c.id])", not "j.id = c.id": an equality the planner could merge
        // on makes a full scan of the primary key useful to it, and after such an ANALYZE it
        // put that scan outside the loop and read the whole table at every claim. Without it,
        // and with the indexes store/plans.cpp leaves it, the one plan not disabled looks each
        // row up by primary key. (The caller puts the rows in claim order: an ORDER BY here
        // would be planned as a disabled sort.)
        std::string pick = kind == QueueStatement::Claim
            ? "SELECT id, priority, run_at, xmin FROM " + q + " WHERE run_at" CK_OP("<=") "$4 AND attempts" CK_OP("<")
              "$3" + not_timed_out + " ORDER BY priority, run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED"
            : kind == QueueStatement::ClaimFromOne
            ? "SELECT id, priority, run_at, xmin FROM " + q + " WHERE priority" EQ "$5 AND (run_at, id)" CK_OP(">=")
              "($6, $7) AND run_at" CK_OP("<=") "$4 AND attempts" CK_OP("<") "$3" + not_timed_out +
              " ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED"
            : "SELECT x.id, x.priority, x.run_at, x.xmin FROM ROWS FROM (pg_catalog.unnest($5), pg_catalog.unnest($6), "
              "pg_catalog.unnest($7)) AS f (p, r, i) CROSS JOIN LATERAL (SELECT id, priority, run_at, xmin FROM " + q +
              " WHERE priority" EQ "f.p AND (run_at, id)" CK_OP(">=") "(f.r, f.i) AND run_at" CK_OP("<=") "$4 AND attempts"
              CK_OP("<") "$3" + not_timed_out + " ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) AS x LIMIT $1";
        Statement st{"WITH c AS MATERIALIZED (" + pick + ") "
                     "UPDATE " + q + " AS j SET lease_token = pg_catalog.nextval('ck.lease_tokens'::pg_catalog.regclass), "
                     "run_at = $4" CK_OP("+") "$2, attempts = j.attempts" CK_OP("+") "1" +
                     // The attempt's deadline ($8: NULL without a timeout), which no heartbeat passes.
                     (has_timeout ? ", timeout_at = $8" : "") + " FROM c WHERE j.id" EQ "ANY (ARRAY[c.id]) "
                     "RETURNING j.id, j.lease_token, j.attempts, j.payload, j.run_at, c.priority, c.run_at, c.xmin, j.concurrency_key",
                     {INT4OID, INTERVALOID, INT4OID, TIMESTAMPTZOID, INT4ARRAYOID, TIMESTAMPTZARRAYOID, INT8ARRAYOID,
                      TIMESTAMPTZOID},
                     has_timeout ? 8 : kind == QueueStatement::Claim ? 4 : 7, generic_fast};
        if (kind == QueueStatement::ClaimFromOne) {
            st.types[4] = INT4OID;
            st.types[5] = TIMESTAMPTZOID;
            st.types[6] = INT8OID;
        }
        return st;
    }
    case QueueStatement::Priorities:
        // At most one more than the frontier keeps, which says there are too many.
        return {priorities + " SELECT priority FROM priorities WHERE priority IS NOT NULL LIMIT " +
                    std::to_string(frontier_max_priorities + 1),
                {}, 0, 0};
    case QueueStatement::Heads:
        // After the periodic full claim: the first job claimable at $2 in each priority of $1
        // (those it did not reach), read without a lock; engine/claim.cpp lowers each frontier to it.
        return {"SELECT x.priority, x.run_at, x.id FROM pg_catalog.unnest($1) AS f (p) CROSS JOIN LATERAL (SELECT priority, "
                "run_at, id FROM " + q + " WHERE priority" EQ "f.p AND run_at" CK_OP("<=") "$2 AND attempts" CK_OP("<")
                "$3 ORDER BY run_at, id LIMIT 1) AS x",
                {INT4ARRAYOID, TIMESTAMPTZOID, INT4OID}, 3, generic_fast};
    case QueueStatement::Bury:
        return {"WITH buried AS (DELETE FROM " + q + " WHERE id" EQ "ANY (ARRAY(SELECT id FROM " + q +
                " WHERE lease_token IS NOT NULL AND run_at" CK_OP(">=") "$3 AND run_at" CK_OP("<=") "$2 AND attempts"
                CK_OP(">=") "$1 ORDER BY run_at LIMIT " + std::to_string(bury_batch) + " FOR UPDATE SKIP LOCKED)) RETURNING *) "
                ", dead AS (INSERT INTO " + dead + " (id, job, attempts, last_error) "
                "SELECT b.id, pg_catalog.to_jsonb(b), b.attempts, "
                "'lease expired on the last attempt' FROM buried AS b)" +
                record("buried", "buried", "'lease expired on the last attempt'", "NULL") +
                " SELECT id, priority, run_at FROM buried",
                {INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID}, 3, generic_fast};
    case QueueStatement::Complete:
        // $3: the result of ck.complete(..., result), kept only with a history.
        if (!hist.empty())
            return {"WITH done AS (DELETE FROM " + q + " WHERE id" EQ "$1 AND " + token_is + " RETURNING *)" +
                        record("done", "completed", "NULL", "$3") + " SELECT priority, run_at FROM done",
                    {INT8OID, INT8OID, JSONBOID}, 3, by_id_generic, true};
        return {"DELETE FROM " + q + " WHERE id" EQ "$1 AND " + token_is + " RETURNING priority, run_at",
                {INT8OID, INT8OID}, 2, by_id_generic, true};
    case QueueStatement::CompleteMany:
        // Pairs matched on the primary key; a pair whose token is stale matches nothing. Each
        // pair's job is looked up by id, as the claim's update does (the same join, planned the
        // same way: see the claim above and store/plans.cpp).
        // With a history, $3 holds the results, pair by pair (NULL: none).
        if (!hist.empty())
            return {"WITH done AS (DELETE FROM " + q + " AS j USING ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), "
                    "pg_catalog.unnest($3)) AS a(id, lease_token, result) WHERE j.id" EQ "ANY (ARRAY[a.id]) AND (j.lease_token"
                    EQ "a.lease_token) IS TRUE" + in_time + " RETURNING j.*, a.result AS ck_result)" +
                        record("done", "completed", "NULL", "r.ck_result") + " SELECT id, priority, run_at FROM done",
                    {INT8ARRAYOID, INT8ARRAYOID, JSONBARRAYOID}, 3, generic_fast};
        return {"DELETE FROM " + q + " AS j USING ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS a(id, lease_token) "
                "WHERE j.id" EQ "ANY (ARRAY[a.id]) AND (j.lease_token" EQ "a.lease_token) IS TRUE" + in_time +
                " RETURNING j.id, j.priority, j.run_at",
                {INT8ARRAYOID, INT8ARRAYOID}, 2, generic_fast};
    case QueueStatement::FailLock:
        return {"SELECT attempts, priority, run_at FROM " + q + " WHERE id" EQ "$1 AND " + token_is + " FOR UPDATE",
                {INT8OID, INT8OID}, 2, by_id_generic, true};
    case QueueStatement::FailRetry:
        return {"UPDATE " + q + " SET lease_token = NULL, run_at = $4" CK_OP("+") "$2, last_error = $3 "
                "WHERE id" EQ "$1 RETURNING priority, run_at",
                {INT8OID, INTERVALOID, TEXTOID, TIMESTAMPTZOID}, 4, by_id_generic, true};
    case QueueStatement::FailDead:
        return {"WITH buried AS (DELETE FROM " + q + " WHERE id" EQ "$1 RETURNING *)" + record("buried", "buried", "$2", "NULL") +
                " INSERT INTO " + dead + " (id, job, attempts, last_error) "
                "SELECT b.id, pg_catalog.to_jsonb(b), b.attempts, $2 FROM buried AS b",
                {INT8OID, TEXTOID}, 2, by_id_generic, true};
    case QueueStatement::ExtendLease:
        // o is the row as it was: where the job is ready again if this transaction aborts.
        // An attempt's lease never passes its deadline (timeout_at), nor is it extended once that
        // has passed (engine/timeout.cpp).
        if (has_timeout)
            return {"UPDATE " + q + " AS j SET run_at = LEAST($4" CK_OP("+") "$3, j.timeout_at) FROM " + q + " AS o WHERE j.id"
                    EQ "$1 AND o.id" EQ "$1 AND (j.lease_token" EQ "$2) IS TRUE AND (j.timeout_at IS NULL OR j.timeout_at"
                    CK_OP(">") "$4) RETURNING j.run_at, o.priority, o.run_at",
                    {INT8OID, INT8OID, INTERVALOID, TIMESTAMPTZOID}, 4, by_id_generic, true};
        return {"UPDATE " + q + " AS j SET run_at = $4" CK_OP("+") "$3 FROM " + q + " AS o WHERE j.id" EQ "$1 AND o.id"
                EQ "$1 AND (j.lease_token" EQ "$2) IS TRUE RETURNING j.run_at, o.priority, o.run_at",
                {INT8OID, INT8OID, INTERVALOID, TIMESTAMPTZOID}, 4, by_id_generic, true};
    case QueueStatement::RetryDead:
        return {"WITH revived AS (DELETE FROM " + dead + " WHERE id" EQ "$1 RETURNING job) "
                "INSERT INTO " + q + " SELECT r.* FROM revived, pg_catalog.jsonb_populate_record(NULL::" + q +
                ", revived.job" CK_OP("||") "pg_catalog.jsonb_build_object('attempts', 0, 'lease_token', NULL, "
                "'run_at', " + now + ", 'last_error', NULL, 'parked_run_at', NULL, 'waiting_for', NULL, 'has_dependants', NULL)) AS r",
                {INT8OID}, 1, 0};
    case QueueStatement::PurgeDead:
        return {"DELETE FROM " + dead + " WHERE died_at" CK_OP("<") "(" + now + CK_OP("-") "$1)", {INTERVALOID}, 1, 0};
    case QueueStatement::NextDueOf:
        // The same over the priorities the frontier knows ($2), without the loose scan, which
        // walks the dead entries at the head of each priority, and only up to $3.
        return {"SELECT pg_catalog.min(n.run_at) FROM pg_catalog.unnest($2) AS p(priority),"
                "  LATERAL (SELECT run_at FROM " + q + " AS j WHERE j.priority" EQ "p.priority AND j.run_at" CK_OP(">")
                "$1 AND j.run_at" CK_OP("<=") "$3 ORDER BY j.run_at LIMIT 1) AS n",
                {TIMESTAMPTZOID, INT4ARRAYOID, TIMESTAMPTZOID}, 3, 0};
    case QueueStatement::NextDue:
        return {priorities + " SELECT pg_catalog.min(n.run_at) FROM priorities AS p,"
                "  LATERAL (SELECT run_at FROM " + q + " AS j WHERE j.priority" EQ "p.priority AND j.run_at" CK_OP(">")
                "$1 ORDER BY j.run_at LIMIT 1) AS n WHERE p.priority IS NOT NULL",
                {TIMESTAMPTZOID}, 1, 0};
    case QueueStatement::Stats:
        // Exact counts from the index ranges that stay small (leased, scheduled and claimable
        // up to 10,000 rows); past that, ready is estimated from the table's size ($1, from
        // the relcache: pg_class would hide a Citus shard from a client's session).
        return {priorities + ", leased AS ("
                "  SELECT pg_catalog.count(*) FILTER (WHERE run_at" CK_OP(">") + now + ") AS running,"
                "         pg_catalog.count(*) FILTER (WHERE run_at" CK_OP("<=") + now + ") AS expired"
                "  FROM " + q + " WHERE lease_token IS NOT NULL"
                "), future AS ("
                "  SELECT pg_catalog.count(*) AS n FROM priorities AS p,"
                "    LATERAL (SELECT 1 FROM " + q + " AS j WHERE j.priority" EQ "p.priority AND j.run_at" CK_OP(">") + now +
                "             AND j.lease_token IS NULL) AS f"
                "  WHERE p.priority IS NOT NULL"
                "), claimable AS ("
                "  SELECT pg_catalog.count(*) AS n FROM (SELECT 1 FROM " + q + " WHERE run_at" CK_OP("<=") + now +
                "    AND lease_token IS NULL LIMIT 10001) AS c"
                "), oldest AS ("
                "  SELECT pg_catalog.min(o.run_at) AS run_at FROM priorities AS p,"
                "    LATERAL (SELECT run_at FROM " + q + " AS j WHERE j.priority" EQ "p.priority"
                "             AND j.run_at" CK_OP("<=") + now + " AND j.lease_token IS NULL ORDER BY j.run_at LIMIT 1) AS o"
                "  WHERE p.priority IS NOT NULL"
                ")"
                " SELECT CASE WHEN claimable.n" CK_OP("<=") "10000 THEN claimable.n"
                "        ELSE GREATEST(10001, $1" CK_OP("-") "future.n" CK_OP("-") "leased.running"
                CK_OP("-") "leased.expired) END,"
                "   future.n, leased.running, leased.expired,"
                "   (SELECT pg_catalog.count(*) FROM " + dead + "),"
                "   " + now + CK_OP("-") "oldest.run_at,"
                "   claimable.n" CK_OP(">") "10000"
                " FROM leased, future, claimable, oldest",
                {INT8OID}, 1, 0};
    case QueueStatement::TimedOut:
        // Leases that ended at their attempt's deadline ($1 the moment, $2 the burial's frontier),
        // oldest first; engine/timeout.cpp fails each with 'timeout'.
        return {"SELECT id, attempts, priority, run_at FROM " + q + " WHERE lease_token IS NOT NULL AND run_at" CK_OP(">=")
                "$2 AND run_at" CK_OP("<=") "$1 AND run_at" CK_OP(">=") "timeout_at"
                " ORDER BY run_at LIMIT " + std::to_string(bury_batch) + " FOR UPDATE SKIP LOCKED",
                {TIMESTAMPTZOID, TIMESTAMPTZOID}, 2, generic_fast};
    case QueueStatement::RetryDeadMatching:
    case QueueStatement::PurgeDeadMatching: {
        // The filter of the bulk calls (sql/dead_letters.cpp), each condition off when its
        // parameter is NULL: $1 last_error, $2 error_like, $3 older_than, $4 min_attempts, $5
        // payload_contains (containment: an expression GIN index on (job -> 'payload') serves it),
        // $6 the batch. Oldest first (the died_at index), rows another transaction holds skipped.
        const std::string match = " FROM " + dead + " AS d WHERE ($1 IS NULL OR d.last_error" EQ "$1)"
            " AND ($2 IS NULL OR d.last_error" CK_OP("~~") "$2)"
            " AND ($3 IS NULL OR d.died_at" CK_OP("<") "(" + now + CK_OP("-") "$3))"
            " AND ($4 IS NULL OR d.attempts" CK_OP(">=") "$4)"
            " AND ($5 IS NULL OR (d.job" CK_OP("->") "'payload')" CK_OP("@>") "$5)";
        const std::string batch = " ORDER BY d.died_at, d.id LIMIT $6 FOR UPDATE OF d SKIP LOCKED";
        if (kind == QueueStatement::PurgeDeadMatching)
            return {"DELETE FROM " + dead + " WHERE id" EQ "ANY (ARRAY(SELECT d.id" + match + batch + "))",
                    {TEXTOID, TEXTOID, INTERVALOID, INT4OID, JSONBOID, INT4OID}, 6, 0};
        // As RetryDead, for a batch; a dead letter whose unique key a job of the queue holds now
        // is left dead (not picked; ON CONFLICT for one taken since the snapshot, or by an
        // earlier row of the batch): only the dead letters whose job went back are deleted.
        return {"WITH picked AS MATERIALIZED (SELECT d.id, d.job" + match + " AND NOT EXISTS (SELECT FROM " + q + " AS j WHERE j.unique_key"
                EQ "(d.job" CK_OP("->>") "'unique_key'))" + batch + "), revived AS ("
                "INSERT INTO " + q + " SELECT r.* FROM picked AS d, pg_catalog.jsonb_populate_record(NULL::" + q +
                ", d.job" CK_OP("||") "pg_catalog.jsonb_build_object('attempts', 0, 'lease_token', NULL, "
                "'run_at', " + now + ", 'last_error', NULL, 'parked_run_at', NULL, 'waiting_for', NULL, 'has_dependants', NULL,"
                " 'timeout_at', NULL)) AS r"
                " ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING RETURNING id) "
                "DELETE FROM " + dead + " WHERE id" EQ "ANY (ARRAY(SELECT id FROM revived))",
                {TEXTOID, TEXTOID, INTERVALOID, INT4OID, JSONBOID, INT4OID}, 6, 0};
    }
    case QueueStatement::JobFind: {
        // $1 the id, $2 the moment. A job still in the queue says where it is; else its latest
        // history record (a dead letter retried and finished again has two).
        std::string in_queue = "SELECT CASE WHEN j.lease_token IS NOT NULL AND j.run_at" CK_OP(">") "$2 THEN 'running'"
            " ELSE 'waiting' END, j.attempts, j.last_error, NULL::pg_catalog.jsonb, j.enqueued_at, NULL::pg_catalog.timestamptz"
            " FROM " + q + " AS j WHERE j.id" EQ "$1";
        if (hist.empty())
            return {in_queue, {INT8OID, TIMESTAMPTZOID}, 2, 0};
        return {"(" + in_queue + ") UNION ALL (SELECT h.state, h.attempts, h.error, h.result, h.enqueued_at, h.finished_at"
                " FROM " + hist + " AS h WHERE h.id" EQ "$1 ORDER BY h.finished_at DESC LIMIT 1) LIMIT 1",
                {INT8OID, TIMESTAMPTZOID}, 2, 0};
    }
    case QueueStatement::JobDead:
        // A dead letter, without a history record: its reason says whether it was cancelled.
        return {"SELECT CASE WHEN d.last_error" EQ "'cancelled' THEN 'cancelled' ELSE 'buried' END, d.attempts, d.last_error,"
                " NULL::pg_catalog.jsonb, (d.job" CK_OP("->>") "'enqueued_at')::pg_catalog.timestamptz, d.died_at"
                " FROM " + dead + " AS d WHERE d.id" EQ "$1 LIMIT 1",
                {INT8OID}, 1, 0};
    case QueueStatement::JobGiven: {
        // Given when at most the last value of the queue's identity sequence (not called yet:
        // none given); when the caller may not read the sequence, or there is none, it cannot
        // tell: gone.
        std::string seq = "'" + std::to_string(sequence) + "'::pg_catalog.oid";
        std::string given = sequence == InvalidOid ? "true" :
            "CASE WHEN pg_catalog.has_sequence_privilege(" + seq + ", 'SELECT,USAGE') THEN COALESCE($1" CK_OP("<=")
            "pg_catalog.pg_sequence_last_value(" + seq + "::pg_catalog.regclass), false) ELSE true END";
        return {"SELECT CASE WHEN " + given + " THEN 'gone' ELSE 'unknown' END, NULL::pg_catalog.int4, NULL::pg_catalog.text,"
                " NULL::pg_catalog.jsonb, NULL::pg_catalog.timestamptz, NULL::pg_catalog.timestamptz",
                {INT8OID}, 1, 0};
    }
    // Pause and resume (sql/pause.cpp): the queue's row, which the queues_changed trigger turns
    // into an invalidation of every backend's settings of the queue at commit.
    case QueueStatement::Pause:
        return {"UPDATE ck.queues SET paused_at = pg_catalog.now() WHERE queue" EQ "$1 AND paused_at IS NULL RETURNING true",
                {REGCLASSOID}, 1, 0};
    case QueueStatement::Resume:
        return {"UPDATE ck.queues SET paused_at = NULL WHERE queue" EQ "$1 AND paused_at IS NOT NULL RETURNING true",
                {REGCLASSOID}, 1, 0};
    // Rate limits (rules/rate.cpp): $1 queue, $2 keyed, $3 key ('' when not keyed), $4 max_jobs,
    // $5 period, $6 its bucket width, $7 a stripe, $8 the bucket of now. A key's window is split over its stripe rows
    // (rate_limits.hpp), each counted as ck.try_rate counts its row (rate/window.hpp) against its
    // share of max_jobs, so that claims of one key count on different rows and commit together.
    case QueueStatement::RateTake:
    case QueueStatement::RateCreate:
    case QueueStatement::RatePutOff:
    case QueueStatement::RateRescale:
    case QueueStatement::RateProbe:
    case QueueStatement::RateWait: {
        const std::string stripes = std::to_string(rate_stripes);
        // Stripe i's share: max_jobs / S, one more for the first max_jobs % S; the shares add up to
        // max_jobs, and a stripe from max_jobs on has none (the active stripes: fewer than LEAST).
        // (OPERATOR(...) binds all alike, left to right: parenthesized.)
        const std::string share = "(($4" CK_OP("/") + stripes + ")" CK_OP("+") "CASE WHEN r.stripe" CK_OP("<") "($4" CK_OP("%") +
                                  stripes + ") THEN 1 ELSE 0 END)";
        const std::string active = "r.stripe" CK_OP("<") "LEAST($4, " + stripes + ")";
        RateWindowSql w = rate_window_sql(share, "$6");
        // RateTake never waits for a row: the bucket of now is the caller's reading ($8).
        RateWindowSql taken = rate_window_sql(share, "$6", "$8");
        const std::string key = " WHERE r.queue" EQ "$1 AND r.keyed" EQ "$2 AND r.concurrency_key" EQ "$3";
        // A stripe's next free moment: when enough of its buckets left the window, or the end of what
        // earlier put-off jobs booked on it, whichever is later; a stripe's bookings are spaced
        // period / share apart, so that the key's put-off jobs come due at its rate, not all at once.
        const std::string step = "($5" CK_OP("/") + share + "::pg_catalog.float8)";
        const std::string free = "GREATEST(" + w.next + ", r.booked, pg_catalog.clock_timestamp())";
        std::string sql;
        switch (kind) {
        // The first stripe with room that no other claim holds, never waiting. Its room is checked on
        // the version it locks (the latest), which nobody changes before the UPDATE, and the clock
        // only frees room: not again.
        case QueueStatement::RateTake:
            // (An init plan: the sub-select's r is its own row.)
            sql = "UPDATE ck.rate_starts AS r SET " + taken.count + key + " AND r.stripe" EQ "(SELECT r.stripe FROM ck.rate_starts AS r" +
                  key + " AND " + taken.room + " ORDER BY r.stripe LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) RETURNING r.stripe";
            break;
        case QueueStatement::RateWait:   // stripe $7, waiting for the claim that holds it
            sql = "UPDATE ck.rate_starts AS r SET " + w.count + key + " AND r.stripe" EQ "$7 AND " + w.room + " RETURNING r.stripe";
            break;
        case QueueStatement::RateCreate:   // the key's active stripes, nothing counted yet
            sql = "INSERT INTO ck.rate_starts AS r (queue, keyed, concurrency_key, stripe, " + w.columns + ") SELECT $1, $2, $3, g, " +
                  w.empty + " FROM pg_catalog.generate_series(0, LEAST($4, " + stripes + ")" CK_OP("-") "1) AS g ON CONFLICT DO NOTHING";
            break;
        case QueueStatement::RateRescale:
            sql = "UPDATE ck.rate_starts AS r SET " + w.rescale + key + " AND " + w.other;
            break;
        case QueueStatement::RateProbe:   // the key's stripes, with the latest snapshot and no lock: each one's
                                          // locker (xmax), whether active, of another width, with room
            sql = "SELECT r.stripe, r.xmax, " + active + ", " + w.other + ", " + w.room + " FROM ck.rate_starts AS r" + key +
                  " ORDER BY r.stripe";
            break;
        default:   // RatePutOff: booked on the stripe free first that no other claim holds (and which), else the
                   // moment unbooked
            sql = "WITH s AS (SELECT r.stripe FROM ck.rate_starts AS r" + key + " AND " + active + " ORDER BY " + free +
                  ", r.stripe LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED), u AS (UPDATE ck.rate_starts AS r SET booked = " + free +
                  CK_OP("+") + step + " FROM s" + key + " AND r.stripe" EQ "s.stripe RETURNING r.booked" CK_OP("-") + step +
                  " AS at, r.stripe) SELECT COALESCE((SELECT u.at FROM u), (SELECT pg_catalog.min(" + free + ") FROM ck.rate_starts AS r" +
                  key + " AND " + active + ")), (SELECT u.stripe FROM u)";
            break;
        }
        return {sql, {REGCLASSOID, BOOLOID, TEXTOID, INT4OID, INTERVALOID, INT8OID, INT4OID, INT8OID}, 8, 0};
    }
    // The claim of job $1 undone but for its place: ready at $2, its attempt not counted.
    case QueueStatement::RateDefer:
        return {"UPDATE " + q + " SET run_at = $2, lease_token = NULL, attempts = attempts" CK_OP("-") "1 WHERE id" EQ "$1",
                {INT8OID, TIMESTAMPTZOID}, 2, by_id_generic, true};
    // Pause and resume of one concurrency key (sql/pause.cpp, rules/key_pause.cpp).
    case QueueStatement::KeyPause:
        return {"INSERT INTO ck.paused_keys (queue, concurrency_key) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING true",
                {REGCLASSOID, TEXTOID}, 2, 0};
    case QueueStatement::KeyResume:
        return {"DELETE FROM ck.paused_keys WHERE queue" EQ "$1 AND concurrency_key" EQ "$2 RETURNING true",
                {REGCLASSOID, TEXTOID}, 2, 0};
    case QueueStatement::KeySettle:
        return {"SELECT ck_internal.settle_paused_key($1, $2)", {REGCLASSOID, TEXTOID}, 2, 0};
    case QueueStatement::KeyTouch:
        return {"UPDATE ck.queues SET queue = queue WHERE queue" EQ "$1", {REGCLASSOID}, 1, 0};
    // The claim of job $1 undone, the job parked at its old place $2 (its own run_at for the
    // resume), while key $4 is paused: its row of ck.paused_keys is locked FOR KEY SHARE, so a
    // resume waits for this transaction, and one that committed first leaves the job claimed.
    case QueueStatement::KeyPark:
        return {"WITH k AS (SELECT FROM ck.paused_keys WHERE queue" EQ "$3 AND concurrency_key" EQ "$4 FOR KEY SHARE)"
                " UPDATE " + q + " SET parked_run_at = $2, run_at = 'infinity'::pg_catalog.timestamptz, lease_token = NULL,"
                " attempts = attempts" CK_OP("-") "1 WHERE id" EQ "$1 AND EXISTS (SELECT FROM k)",
                {INT8OID, TIMESTAMPTZOID, REGCLASSOID, TEXTOID}, 4, by_id_generic, true};
    default:
        throw std::logic_error("not a queue statement");
    }
}
#undef EQ

// The statements whose generic plan plans.cpp makes apart from their execution: those that walk
// the claim index in order (the claim, the burial) and those that find their jobs by id.
bool planned_apart(QueueStatement kind)
{
    switch (kind) {
    case QueueStatement::Claim:
    case QueueStatement::ClaimFrom:
    case QueueStatement::ClaimFromOne:
    case QueueStatement::Heads:
    case QueueStatement::Bury:
    case QueueStatement::TimedOut:
    case QueueStatement::Complete:
    case QueueStatement::CompleteMany:
    case QueueStatement::FailLock:
    case QueueStatement::FailRetry:
    case QueueStatement::FailDead:
    case QueueStatement::ExtendLease:
    case QueueStatement::Cancel:
    case QueueStatement::Park:
    case QueueStatement::UnparkJob:
    case QueueStatement::RateDefer:
    case QueueStatement::KeyPark:
    case QueueStatement::HandOver:
    case QueueStatement::DepLock:
    case QueueStatement::DepMark:
    case QueueStatement::DepRelease:
    case QueueStatement::DepBury:
        return true;
    default:
        return false;
    }
}

// The history table's name, quoted (empty: no history); 42P01 when it was dropped meanwhile.
std::string history_table(Oid history, const char *queue)
{
    if (history == InvalidOid)
        return "";
    return pg_call([&] {
        if (get_rel_relkind(history) == '\0')
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("the history table of queue \"%s\" is missing", queue),
                            errhint("ck.set_history(queue, NULL) turns the history off; ck.set_history(queue, retention) makes it anew.")));
        return quote_qualified_identifier(get_namespace_name(get_rel_namespace(history)), get_rel_name(history));
    });
}

// The sequence of the queue's identity column id (InvalidOid: none, e.g. an adopted table's serial id).
Oid identity_sequence(Oid relid)
{
    return pg_call([&] {
        AttrNumber id = get_attnum(relid, "id");
        if (id == InvalidAttrNumber)
            return InvalidOid;
        List *seqs = getOwnedSequences(relid);
        ListCell *cell;
        foreach (cell, seqs) {
            Oid seq = lfirst_oid(cell);
            Oid table;
            int32 col;
            // The identity's own (internal): a sequence merely owned by id may not give the ids
            // themselves (a Citus shard's gives i, its ids are i * shard_count + shard_index).
            if (sequenceIsOwned(seq, DEPENDENCY_INTERNAL, &table, &col) && col == id)
                return seq;
        }
        return InvalidOid;
    });
}

} // namespace

BlockNumber table_blocks(Oid relid)
{
    return pg_call([&] {
        Relation rel = table_open(relid, AccessShareLock);
        BlockNumber blocks = RelationGetNumberOfBlocks(rel);
        table_close(rel, AccessShareLock);
        return blocks;
    });
}

const QueuePlan &queue_statement(QueueStatement kind, Oid relid)
{
    // A backend's first queue call attaches to the shared state (made now if it is the first
    // after the server's start): its counts and claims need it from then on.
    if (!shared_memory_tried())
        pg_call([] { (void) shared_memory_attach(); });
    PlanKey key(kind, relid, InvalidOid, "", nullptr);
    return prepare_once<QueuePlan>(key, [&] {
        TableRef table = pg_call([&] { return table_ref(relid); });
        QueueRow row = read_queue_row(relid);
        if (!row.found)
            throw Error(ERRCODE_WRONG_OBJECT_TYPE, fmt("table \"%s\" is not a queue", table.qualified),
                        "", "Create queues with ck.create_queue().");
        const char *dead = pg_call([&] {
            if (get_rel_relkind(row.dead_letters) == '\0')
                ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                                errmsg("the dead-letter table of queue \"%s\" is missing", table.qualified)));
            return quote_qualified_identifier(get_namespace_name(get_rel_namespace(row.dead_letters)),
                                              get_rel_name(row.dead_letters));
        });
        // Queues made before 0.3.1 and not updated have no dependencies (nor their columns).
        bool has_dependencies = pg_call([&] { return get_attnum(relid, "waiting_for") != InvalidAttrNumber; });
        // Queues made before 1.1.0 and not updated have no job timeouts (nor their column).
        bool has_timeout = pg_call([&] { return get_attnum(relid, "timeout_at") != InvalidAttrNumber; });
        std::string hist = history_table(row.history, table.qualified);
        Oid sequence = kind == QueueStatement::JobGiven ? identity_sequence(relid) : InvalidOid;
        Statement s = statement_for(kind, table.sql, dead, has_dependencies, has_timeout, has_timeout && row.timed, hist, sequence);
        QueuePlan p;
        p.plan = pg_call([&] { return prepare_kept(s.sql.c_str(), s.nargs, s.types, s.cursor_options); });
        p.table = table.name;
        p.qualified = table.qualified;
        p.max_attempts = row.max_attempts;
        p.lease = row.lease;
        p.dead_letters = row.dead_letters;
        p.has_dependencies = has_dependencies;
        p.apart = planned_apart(kind);
        p.by_id = s.by_id;
        p.has_timeout = has_timeout;
        p.timed = has_timeout && row.timed;
        p.timeout = row.timeout;
        p.history = row.history;
        p.paused = row.paused;
        if (kind == QueueStatement::Claim || kind == QueueStatement::ClaimFrom || kind == QueueStatement::ClaimFromOne)
            p.planned_blocks = table_blocks(relid);
        if (kind == QueueStatement::Claim) {
            p.rates = read_rate_limits(relid);
            p.paused_keys = read_paused_keys(relid);
        }
        return p;
    });
}

uint64 queue_execute(const QueuePlan &p, Oid queue, Datum *values, const char *nulls, Snap snap, Snapshot snapshot)
{
    if (p.apart)
        plan_apart(p, queue);
    return snapshot != nullptr ? execute_plan_in(p.plan, values, nulls, snapshot)
                               : execute_plan(p.plan, values, nulls, snap);
}

} // namespace ck
