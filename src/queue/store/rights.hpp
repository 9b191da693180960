// What the caller may do to a queue, asked before a step that only some callers may take.
#pragma once

#include "base/pg.hpp"

namespace ck {

// Whether the caller may bury: move jobs out of the queue (SELECT, DELETE) into its dead
// letters (INSERT). A worker without those rights claims all the same and leaves the burial
// to one that has them.
bool may_bury(Oid queue, Oid dead_letters);

// Whether the caller may claim: SELECT and UPDATE on the queue.
bool may_claim(Oid queue);

} // namespace ck
