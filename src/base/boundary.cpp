// run_boundary and fmt: how C++ failures become PostgreSQL errors.
#include "base/boundary.hpp"
#include "base/plan_cache.hpp"
#include "base/spi.hpp"

#include <cstdarg>
#include <exception>
#include <new>

namespace ck {

std::string fmt(const char *format, ...)
{
    char buf[1024];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(buf, sizeof buf, format, args);
    va_end(args);
    if (n < 0)
        return format;
    if (static_cast<size_t>(n) < sizeof buf)
        return std::string(buf, n);
    std::string out(static_cast<size_t>(n), '\0');
    va_start(args, format);
    vsnprintf(out.data(), out.size() + 1, format, args);
    va_end(args);
    return out;
}

namespace {

// What a caught C++ error leaves behind: fixed buffers, so nothing inside a catch block
// allocates or can longjmp, and nothing here needs a destructor.
struct Report {
    int sqlstate = 0;
    char message[2048] = "";
    char detail[2048] = "";
    char hint[1024] = "";

    void set(int code, const char *msg, const char *det = "", const char *hnt = "")
    {
        sqlstate = code;
        strlcpy(message, msg, sizeof message);
        strlcpy(detail, det, sizeof detail);
        strlcpy(hint, hnt, sizeof hint);
    }
};

int calls = 0;   // calls of ours under way in this backend (a trigger or SQL may call us again)

struct Call {
    Call() { calls++; }
    ~Call() { calls--; }
};

} // namespace

bool outermost_call()
{
    return calls == 1 && plans_executing() == 0;
}

Datum run_boundary(FunctionCallInfo fcinfo, Datum (*body)(FunctionCallInfo))
{
    ErrorData *pg_error = nullptr;
    Report report;

    try {
        Call call;
        // The outermost call starts holding no cached plan: the one safe time to free them.
        if (outermost_call())
            plan_cache_sweep();
        return body(fcinfo);
    } catch (const PgError &e) {
        pg_error = e.data();
    } catch (const Error &e) {
        report.set(e.sqlstate(), e.message().c_str(), e.detail().c_str(), e.hint().c_str());
    } catch (const std::bad_alloc &) {
        report.set(ERRCODE_OUT_OF_MEMORY, "out of memory in concurrency_kit");
    } catch (const std::exception &e) {
        report.set(ERRCODE_INTERNAL_ERROR, "concurrency_kit internal error", e.what());
    } catch (...) {
        report.set(ERRCODE_INTERNAL_ERROR, "concurrency_kit internal error",
                   "an unknown C++ exception was caught");
    }

    // Out of every catch block now: PostgreSQL may longjmp from here on.
    if (pg_error != nullptr)
        ReThrowError(pg_error);
    ereport(ERROR, (errcode(report.sqlstate), errmsg("%s", report.message),
                    report.detail[0] ? errdetail("%s", report.detail) : 0,
                    report.hint[0] ? errhint("%s", report.hint) : 0));
    pg_unreachable();
}

} // namespace ck
