// lock_timeout for one wait inside a call: how the functions that take a timeout bound
// every wait of theirs (the lock itself, and a namespace registration on the way).
#pragma once

#include "pg.hpp"

namespace ck {

// Sets lock_timeout to ms (at least 1) at a new GUC nest level and returns the level; an
// error before pop_lock_timeout restores it when the (sub)transaction aborts. Raises like
// pg_call's callees: call both inside pg_call.
int push_lock_timeout(int ms);
void pop_lock_timeout(int nest);

} // namespace ck
