// A rate key: at most n calls counted in any window of length period, the count kept in one
// row of ck.rates per key (its rate window: rate/window.hpp). ck.try_rate and ck.rate call it.
#pragma once

#include "base/pg.hpp"

namespace ck {

// The longest key, in bytes. n has no bound but 1 below: the key's row is as large for any n.
constexpr size_t rate_key_max_bytes = 256;

// Counts a call of key if fewer than n calls were counted in the last period: true. False when
// the key is at its rate, nothing changed. Raises 22023 for a key or n out of bounds (the
// caller checks NULLs and the period's sign). Waits for a transaction holding the key's row
// (one that counted a call and has not ended), as long as lock_timeout allows.
bool rate_take(text *key, int32 n, Interval *period);

// When the key's next call would be counted (the first bucket at which the key has room), read
// with the latest snapshot; 0 when it has no row. For messages: the row may change right after.
TimestampTz rate_next(text *key, int32 n, Interval *period);

} // namespace ck
