// SQL that no search_path can redirect. The extension's functions run with the caller's
// search_path (no SET clause): every operator they write is schema-qualified, every
// function and type is too, and relations are printed from their OIDs.
#pragma once

#include "base/pg.hpp"

// " OPERATOR(pg_catalog.op) " between two operands. OPERATOR() binds tighter than AND and
// the comparison keywords but looser than + - * /, so parenthesise operands that are
// themselves operator expressions.
#define CK_OP(op) " OPERATOR(pg_catalog." op ") "

namespace ck {

// "OPERATOR(schema.=)": the equality operator of type's default btree operator class
// (a user's type brings its own, in its own schema); 42883 when the type has none.
// Raises like pg_call's callees: call it inside pg_call.
const char *equality_operator_sql(Oid type);

} // namespace ck
