// Settings changed for one step inside a call and restored right after it: lock_timeout for
// one wait (the lock itself, a namespace registration on the way), planner switches for the
// making of one plan.
#pragma once

#include "base/pg.hpp"

#include <initializer_list>
#include <utility>

namespace ck {

// Sets each (name, value) at a new GUC nest level and returns the level; an error before
// pop_settings restores them when the (sub)transaction aborts. Raises like pg_call's
// callees: call both inside pg_call.
int push_settings(std::initializer_list<std::pair<const char *, const char *>> settings);
void pop_settings(int nest);

// push_settings for lock_timeout = ms (at least 1).
int push_lock_timeout(int ms);

// lock_timeout = ms (at least 1) again, inside the nest level push_lock_timeout made: for a
// budget shared by several waits.
void reset_lock_timeout(int ms);

} // namespace ck
