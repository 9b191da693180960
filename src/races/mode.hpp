// ck.race_detector: whether lost updates are looked for, and what a found one does
// (off, the default; log; warning; error with SQLSTATE CK008).
#pragma once

#include "base/pg.hpp"

namespace ck {

enum RaceMode { RACE_OFF, RACE_LOG, RACE_WARNING, RACE_ERROR };

extern int race_mode;

// The detector looks under READ COMMITTED only: at REPEATABLE READ and SERIALIZABLE
// PostgreSQL itself refuses to update a row changed since the snapshot (40001).
inline bool race_detector_watching()
{
    return race_mode != RACE_OFF && !IsolationUsesXactSnapshot();
}

// Defines the setting and reserves the prefix ck.; from _PG_init.
void race_mode_init();

} // namespace ck
