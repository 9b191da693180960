// A rate key: at most n calls counted in any window of length period, the count kept in one
// row of ck.rates per key (the key's n latest counted moments). ck.try_rate and ck.rate call it.
#pragma once

#include "base/pg.hpp"

namespace ck {

// The longest key, in bytes, and the largest n a call may ask for (the key's row keeps n moments).
constexpr size_t rate_key_max_bytes = 256;
constexpr int32 rate_max_n = 10000;

// Counts a call of key if fewer than n calls were counted in the last period: true. False when
// the key is at its rate, nothing changed. Raises 22023 for a key or n out of bounds (the
// caller checks NULLs and the period's sign). Waits for a transaction holding the key's row
// (one that counted a call and has not ended), as long as lock_timeout allows.
bool rate_take(text *key, int32 n, Interval *period);

// When the key's next call would be counted (its n-th latest moment + period), read with the
// latest snapshot; 0 when one would be now. For messages: the row may change right after.
TimestampTz rate_next(text *key, int32 n, Interval *period);

} // namespace ck
