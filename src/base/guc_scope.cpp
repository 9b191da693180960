// Settings for one step, restored after it.
#include "base/guc_scope.hpp"

extern "C" {
#include "utils/guc.h"
}

namespace ck {

int push_settings(std::initializer_list<std::pair<const char *, const char *>> settings)
{
    int nest = NewGUCNestLevel();
    for (const auto &[name, value] : settings)
        (void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
    return nest;
}

void pop_settings(int nest)
{
    AtEOXact_GUC(true, nest);
}

int push_lock_timeout(int ms)
{
    int nest = NewGUCNestLevel();
    reset_lock_timeout(ms);
    return nest;
}

void reset_lock_timeout(int ms)
{
    char value[32];
    snprintf(value, sizeof value, "%d", ms < 1 ? 1 : ms);
    (void) set_config_option("lock_timeout", value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

} // namespace ck
