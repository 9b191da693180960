// lock_timeout set for one wait and restored after it.
#include "lock_timeout.hpp"

extern "C" {
#include "utils/guc.h"
}

namespace ck {

int push_lock_timeout(int ms)
{
    int nest = NewGUCNestLevel();
    char value[32];
    snprintf(value, sizeof value, "%d", ms < 1 ? 1 : ms);
    (void) set_config_option("lock_timeout", value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
    return nest;
}

void pop_lock_timeout(int nest)
{
    AtEOXact_GUC(true, nest);
}

} // namespace ck
