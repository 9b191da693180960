// How the statements planned apart (the claim, the burial, complete_many and the lookups by id)
// get their generic plans: made apart from their execution, with plan-time settings and the rows
// they change looked up by id, so that what the last ANALYZE saw cannot turn them into
// whole-table scans (plans.cpp). queue_execute calls it; nothing else needs to.
#pragma once

#include "queue/store/statements.hpp"

namespace ck {

// Installs the planner hook; from _PG_init.
void queue_plan_init();

// Makes p's generic plan now if it has none or it was invalidated (an ANALYZE, DDL); p is a
// statement of queue. Raises like pg_call's callees.
void plan_apart(const QueuePlan &p, Oid queue);

} // namespace ck
