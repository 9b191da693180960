// How the claim, the burial, complete_many and the lookups by id get their generic plans: made
// apart from their execution, with plan-time settings and the rows they change looked up by id,
// so that what the last ANALYZE saw cannot turn them into whole-table scans (queue_plan.cpp).
#pragma once

#include "base/plan_cache.hpp"

namespace ck {

// Installs the planner hook; from _PG_init.
void queue_plan_init();

// Makes p's generic plan now if it has none or it was invalidated (an ANALYZE, DDL); p is a
// statement of queue. Raises like pg_call's callees.
void plan_queue_statement(const Prepared &p, Oid queue);

// queue_statement(kind, queue) with its plan made so, for the statements that read jobs by id;
// execute it right away (a statement in between could take an invalidation, and the execution
// would plan it afresh, unrestricted).
const Prepared &statement_by_id(StatementKind kind, Oid queue);

} // namespace ck
