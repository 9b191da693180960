// The hand-over of a departed job's slot to the oldest parked job of its key, done with the
// access methods where that is the exact equal of the statement (handover.cpp).
#pragma once

#include "base/pg.hpp"

namespace ck {

// The hand-over's statement done so: 1 when the oldest parked job of `key` took the slot, 0 when none did,
// -1 when only the statement may do it. Outside pg_call.
int hand_over_in_place(Oid queue, Datum key, Datum now);

} // namespace ck
