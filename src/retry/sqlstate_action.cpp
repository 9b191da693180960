// ck.sqlstate_action: what a client should do with an error, by its SQLSTATE.
#include "base/boundary.hpp"
#include "base/errcodes.hpp"

#include <cstring>

namespace {

bool is_sqlstate(const char *s, size_t len)
{
    if (len != 5)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'Z')))
            return false;
    return true;
}

const char *action_for(int code)
{
    switch (code) {
    case ERRCODE_T_R_SERIALIZATION_FAILURE:
    case ERRCODE_T_R_DEADLOCK_DETECTED:
    case CK_ERRCODE_STALE_VERSION:   // re-read the row, re-apply the change
        return "retry";
    case ERRCODE_LOCK_NOT_AVAILABLE:
    case CK_ERRCODE_RATE_EXCEEDED:   // call again once the rate allows
        return "busy";
    case ERRCODE_UNIQUE_VIOLATION:
    case ERRCODE_EXCLUSION_VIOLATION:
    case CK_ERRCODE_INSUFFICIENT:
    case CK_ERRCODE_BOUND_EXCEEDED:
    case CK_ERRCODE_WRONG_STATE:
    case CK_ERRCODE_NO_SUCH_ROW:
    case CK_ERRCODE_LEASE_LOST:
        return "conflict";
    default:
        return "error";
    }
}

} // namespace

CK_FUNCTION(ck_sqlstate_action)
{
    text *arg = PG_GETARG_TEXT_PP(0);
    const char *s = VARDATA_ANY(arg);
    size_t len = VARSIZE_ANY_EXHDR(arg);
    if (!is_sqlstate(s, len))
        throw ck::Error(ERRCODE_INVALID_PARAMETER_VALUE,
                        ck::fmt("\"%.*s\" is not a SQLSTATE", static_cast<int>(len > 32 ? 32 : len), s),
                        "A SQLSTATE is five characters, digits or upper-case letters, such as 40001.");
    int code = MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4]);
    return PointerGetDatum(cstring_to_text(action_for(code)));
}
