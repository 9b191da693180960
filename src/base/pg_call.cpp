// pg_call_raw: the single place where a PostgreSQL longjmp becomes a C++ exception.
#include "base/pg.hpp"

namespace ck {

void pg_call_raw(void (*fn)(void *), void *arg)
{
    MemoryContext caller_cxt = CurrentMemoryContext;
    ErrorData *volatile caught = nullptr;

    // PG_TRY saves and restores PG_exception_stack and error_context_stack for us.
    PG_TRY();
    {
        fn(arg);
    }
    PG_CATCH();
    {
        // CopyErrorData must not run in ErrorContext; the copy lives in the caller's
        // context until the boundary re-raises it with ReThrowError.
        MemoryContextSwitchTo(caller_cxt);
        caught = CopyErrorData();
        FlushErrorState();
    }
    PG_END_TRY();

    if (caught != nullptr)
        throw PgError(caught);
}

} // namespace ck
