// The setting ck.race_detector. Its checks are planned into UPDATE statements, so turning it
// on or off replans every cached plan of the backend (a plan made while it was off has none).
#include "races/mode.hpp"

extern "C" {
#include "utils/guc.h"
#include "utils/plancache.h"
}

namespace ck {

int race_mode = RACE_OFF;

namespace {

const struct config_enum_entry modes[] = {
    {"off", RACE_OFF, false},
    {"log", RACE_LOG, false},
    {"warning", RACE_WARNING, false},
    {"error", RACE_ERROR, false},
    {nullptr, 0, false},
};

void replan(int newval, void *)
{
    if ((newval == RACE_OFF) != (race_mode == RACE_OFF))
        ResetPlanCache();
}

} // namespace

void race_mode_init()
{
    DefineCustomEnumVariable("ck.race_detector",
                             "Reports lost updates as they happen under READ COMMITTED.",
                             "off, log, warning or error (SQLSTATE CK008): an UPDATE that overwrites a column "
                             "of a row another transaction changed after this one read the table without a lock.",
                             &race_mode, RACE_OFF, modes, PGC_USERSET, 0, nullptr, replan, nullptr);
    MarkGUCPrefixReserved("ck");
}

} // namespace ck
