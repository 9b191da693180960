// Reading SQL-level arguments: the NULL check every entry point makes, and intervals.
#pragma once

#include "boundary.hpp"

namespace ck {

// Raises 22004 "<what> must not be NULL" when argument argno is NULL.
void require_arg(FunctionCallInfo fcinfo, int argno, const char *what);

// The interval's length in microseconds, a month counted as 30 days (as PostgreSQL does).
double interval_usecs(const Interval *iv);

} // namespace ck
