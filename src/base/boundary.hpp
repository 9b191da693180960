// The extern "C" boundary: every SQL-callable function is declared with CK_FUNCTION, which
// runs its body under run_boundary so no C++ exception ever reaches PostgreSQL.
#pragma once

#include "base/pg.hpp"

#include <string>

namespace ck {

// An error of ours, raised from C++ code: becomes ereport(ERROR) at the boundary after
// every C++ destructor has run.
class Error {
public:
    Error(int sqlstate, std::string message, std::string detail = {}, std::string hint = {})
        : sqlstate_(sqlstate), message_(std::move(message)), detail_(std::move(detail)),
          hint_(std::move(hint)) {}
    int sqlstate() const { return sqlstate_; }
    const std::string &message() const { return message_; }
    const std::string &detail() const { return detail_; }
    const std::string &hint() const { return hint_; }

private:
    int sqlstate_;
    std::string message_, detail_, hint_;
};

// printf-style formatting into a std::string (PostgreSQL's own snprintf underneath).
std::string fmt(const char *format, ...) pg_attribute_printf(1, 2);

// True while the call under way is the only one of ours in this backend (none of our callers
// holds a cached plan): where plan_cache_sweep may free plans.
bool outermost_call();

// Runs body(fcinfo); a PgError is re-raised unchanged, an Error or any other C++
// exception becomes ereport(ERROR) once the catch block has been left.
Datum run_boundary(FunctionCallInfo fcinfo, Datum (*body)(FunctionCallInfo));

} // namespace ck

#define CK_FUNCTION(name)                                                          \
    static Datum name##_body(FunctionCallInfo fcinfo);                             \
    extern "C" {                                                                   \
    PG_FUNCTION_INFO_V1(name);                                                     \
    }                                                                              \
    Datum name(PG_FUNCTION_ARGS) { return ck::run_boundary(fcinfo, name##_body); } \
    static Datum name##_body(FunctionCallInfo fcinfo)
