// SPI through the guard: connect, prepare and keep, execute, read results.
#pragma once

#include "base/pg.hpp"

namespace ck {

void spi_connect();
void spi_finish();

// SPI_prepare_cursor + SPI_keepplan, raising on failure (call inside pg_call).
// cursor_options: 0, or CURSOR_OPT_FAST_PLAN for statements that want their first rows fast.
SPIPlanPtr prepare_kept(const char *sql, int nargs, Oid *argtypes, int cursor_options = 0);

// Which snapshot a statement of ours runs with.
enum class Snap {
    Caller,     // a copy of the calling statement's, as if our statement were part of it (no new snapshot)
    Fresh,      // a new one under READ COMMITTED: to see what committed since the call began
    ReadOnly,   // the calling statement's, for statements that only read
    Latest,     // a new one under REPEATABLE READ too: bookkeeping that must see every commit so far
};

// Executes a kept plan inside the current SPI connection and returns the row count.
uint64 execute_plan(SPIPlanPtr plan, Datum *values, const char *nulls, Snap snap = Snap::Caller);

// The same with a snapshot of the caller's (registered by it), for a caller that must know
// which snapshot its statement saw.
uint64 execute_plan_in(SPIPlanPtr plan, Datum *values, const char *nulls, Snapshot snapshot);

// Executes one statement text once, with no parameters (DDL).
void execute_sql(const char *sql);

// How many execute_plan calls are under way in this backend (a trigger may call us again).
int plans_executing();

// Counts an execution of a kept plan that does not go through execute_plan (a cursor) in
// plans_executing for its lifetime, so the plan cache frees no plan under it.
struct PlanExecution {
    PlanExecution();
    ~PlanExecution();
    PlanExecution(const PlanExecution &) = delete;
    PlanExecution &operator=(const PlanExecution &) = delete;
};

// Column col (1-based) of result row `row` of the last execution.
Datum result_datum(uint64 row, int col, bool *isnull);

} // namespace ck

namespace ck {

// Sets fcinfo up to return a set in materialize mode (a tuplestore in setResult, the
// declared columns in setDesc). Raises like pg_call's callees: call it inside pg_call.
ReturnSetInfo *begin_result_set(FunctionCallInfo fcinfo);

// Appends every row of the last execution to the result set, the first ncols columns of
// each (all with -1), which must match the declared result columns; in the order of the row
// numbers in order, when given. Inside pg_call.
void append_result_rows(ReturnSetInfo *rsinfo, int ncols = -1, const uint64 *order = nullptr);

// Returns every row of the last execution as the set-returning function's result
// (materialize mode), as append_result_rows does.
Datum return_result_rows(FunctionCallInfo fcinfo, int ncols = -1);

} // namespace ck
