// A job's place in the claim index, read from the rows a queue statement returned, and what
// the claim frontier must learn when a statement that changed a job rolls back.
#pragma once

#include "queue/queue_frontier.hpp"

namespace ck {

struct JobKey {
    int32 priority;
    FrontierKey key;
};

// Columns col, col + 1 (priority, run_at) and id_col (0: none) of the last execution must
// have the types ck.create_queue gives them. Inside pg_call.
void check_key_columns(int col, int id_col);

// The place of the job of result row `row`: its id from column id_col (0: the given id), its
// priority and run_at from columns col and col + 1. Inside pg_call.
JobKey job_key(uint64 row, int col, int id_col, Datum id = 0);

// After a statement that locked, changed or removed job id: if this transaction aborts, the
// job is ready again where it was (columns col, col + 1 of the first result row: priority,
// run_at).
void ready_again_on_abort(Oid queue, Datum id, int col);

// The attribute number of the queue's column name in desc when it has that type, else
// InvalidAttrNumber (a trigger's transition table). Never raises.
AttrNumber job_column(TupleDesc desc, const char *name, Oid type);

} // namespace ck
