// The C symbols of 0.x functions that 1.0 replaced with others (new argument order or a new
// meaning for the name). The 0.x install and upgrade scripts still name them, and PostgreSQL
// checks that a C function's symbol exists when the script creates it, so they stay; until
// ALTER EXTENSION concurrency_kit UPDATE has replaced the 0.x functions they refuse to run,
// rather than read a 0.x call's arguments in the 1.0 order.
#include "boundary.hpp"

namespace {

[[noreturn]] Datum refuse(const char *function, const char *instead)
{
    throw ck::Error(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                    ck::fmt("%s of concurrency_kit 0.x cannot run on the 1.0 library", function),
                    ck::fmt("1.0 has %s.", instead), "Run ALTER EXTENSION concurrency_kit UPDATE.");
}

} // namespace

CK_FUNCTION(ck_try_decrement) { return refuse("ck.try_decrement", "ck.try_decrement(table, key, column, amount)"); }
CK_FUNCTION(ck_decrement) { return refuse("ck.decrement", "ck.decrement(table, key, column, amount)"); }
CK_FUNCTION(ck_try_increment)
{
    return refuse("ck.try_increment", "ck.try_increment(table, key, column, amount, upper_bound)");
}
CK_FUNCTION(ck_increment) { return refuse("ck.increment", "ck.increment(table, key, column, amount, upper_bound)"); }
CK_FUNCTION(ck_transition) { return refuse("ck.transition", "ck.try_transition (false on another state)"); }
CK_FUNCTION(ck_transition_or_raise) { return refuse("ck.transition_or_raise", "ck.transition (it raises)"); }
CK_FUNCTION(ck_update_if_version)
{
    return refuse("ck.update_if_version", "ck.try_update_if_version (NULL when stale)");
}
CK_FUNCTION(ck_update_if_version_or_raise)
{
    return refuse("ck.update_if_version_or_raise", "ck.update_if_version (it raises)");
}
