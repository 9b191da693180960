// The planner hook that puts ck_internal.race_check into UPDATE statements that overwrite.
#pragma once

#include "base/pg.hpp"

namespace ck {

// Installs the planner hook; from _PG_init.
void race_overwrite_init();

} // namespace ck
