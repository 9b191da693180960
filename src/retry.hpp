// ck.retry's state for the rest of the extension.
#pragma once

#include "pg.hpp"

namespace ck {

// The attempt of the ck.retry running in this backend (1, 2, ...), 0 outside one.
int32 retry_attempt();

} // namespace ck
