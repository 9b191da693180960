// The one header that brings in PostgreSQL, and the guard that turns a PostgreSQL error
// (a longjmp) into a C++ exception so it cannot jump over live C++ objects.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
}

#include <type_traits>
#include <utility>

namespace ck {

// A PostgreSQL error caught by pg_call; carries the whole ErrorData (SQLSTATE, message,
// detail, hint, context) so the boundary can re-raise it unchanged.
class PgError {
public:
    explicit PgError(ErrorData *data) : data_(data) {}
    ErrorData *data() const { return data_; }

private:
    ErrorData *data_;
};

// Runs fn(arg) under PG_TRY; on error copies the ErrorData into the caller's memory
// context, clears the error state and throws PgError. fn must not throw C++ exceptions
// nor own objects with destructors: a longjmp out of it skips them.
void pg_call_raw(void (*fn)(void *), void *arg);

// pg_call([&] { return SPI_execute_plan(...); }): the lambda must only call PostgreSQL's
// C functions (see pg_call_raw). The lambda and its result live in this frame, which
// sits above the jump buffer, so the longjmp never skips them.
template <typename F>
auto pg_call(F &&f) -> decltype(f())
{
    using R = decltype(f());
    if constexpr (std::is_void_v<R>) {
        pg_call_raw([](void *p) { (*static_cast<F *>(p))(); }, &f);
    } else {
        // Storing the result must not allocate or throw inside PG_TRY.
        static_assert(std::is_trivially_copyable_v<R>, "pg_call results must be trivially copyable");
        struct Slot {
            F *f;
            R result;
        } slot{&f, R{}};
        pg_call_raw([](void *p) {
            auto *s = static_cast<Slot *>(p);
            s->result = (*s->f)();
        }, &slot);
        return slot.result;
    }
}

} // namespace ck
