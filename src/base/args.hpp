// Reading SQL-level arguments: the NULL check every entry point makes, and intervals; the
// warning of transaction-scoped calls outside a transaction block.
#pragma once

#include "base/boundary.hpp"

namespace ck {

// Raises 22004 "<what> must not be NULL" when argument argno is NULL.
void require_arg(FunctionCallInfo fcinfo, int argno, const char *what);

// The actual type of the polymorphic argument argno (42P18 when the call does not say).
Oid polymorphic_arg_type(FunctionCallInfo fcinfo, int argno, const char *what);

// The interval argument argno, which must be > 0 (or >= 0 when zero_ok), else 22023; NULL
// gives nullptr. 'infinity' (PostgreSQL 17+) passes: for a wait it means no bound of its own.
Interval *interval_arg(FunctionCallInfo fcinfo, int argno, const char *what, bool zero_ok = false);

// interval_arg, and 22023 "<what> must be finite" with that hint for 'infinity'.
Interval *finite_interval_arg(FunctionCallInfo fcinfo, int argno, const char *what, bool zero_ok, const char *hint);

// A lease argument (ck.create_queue, the claims, ck.extend_lease): positive and finite.
Interval *lease_arg(FunctionCallInfo fcinfo, int argno);

// A lock wait's bound from interval argument argno, in milliseconds for lock_timeout: -1 when
// NULL (no bound of the call's own), 0 for zero when zero_ok (else 22023 with detail, as for a
// negative one), at least 1 otherwise; longer than lock_timeout's largest value, INT_MAX ms
// (24.8 days), 'infinity' among them, gets that.
int timeout_ms_arg(FunctionCallInfo fcinfo, int argno, bool zero_ok, const char *detail);

// The interval's length in microseconds, a month counted as 30 days (as PostgreSQL does);
// plus or minus HUGE_VAL for 'infinity' and '-infinity'.
double interval_usecs(const Interval *iv);

// WARNING 25P01 "<function> outside a transaction block: the lock is released when this
// statement ends", as PostgreSQL warns for SET LOCAL there (a function that locks and then
// writes, called in autocommit, is legitimate, so not an error). Not in a subtransaction nor
// in a procedure that commits (ck.retry among them): their transactions are the caller's.
void warn_outside_transaction_block(const char *function);

} // namespace ck
