// How the claim, the burial and complete_many get their generic plans: made apart from their
// execution, with plan-time settings and the rows they change looked up by id, so that what
// the last ANALYZE saw cannot turn them into whole-table scans (see queue_plan.cpp).
#pragma once

#include "plan_cache.hpp"

namespace ck {

// Installs the planner hook; from _PG_init.
void queue_plan_init();

// Makes p's generic plan now if it has none or it was invalidated (an ANALYZE, DDL); p is a
// statement of queue. Raises like pg_call's callees.
void plan_queue_statement(const Prepared &p, Oid queue);

} // namespace ck
