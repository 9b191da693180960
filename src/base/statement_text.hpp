// One statement's text out of the string it came in (a multi-statement query string, a function
// body), on one line: what reports and audits quote.
#pragma once

#include "base/pg.hpp"

namespace ck {

// Copies the statement at location (-1: unknown, the whole source) of length len (0: to the end)
// into out, at most size - 1 bytes and cut at a character: leading and trailing white space and
// semicolons dropped, runs of white space (as the SQL scanner reads it) outside quotes as one
// space (PL/pgSQL leaves spaces where it took INTO out; deparsed bodies span lines).
void statement_text(char *out, size_t size, const char *source, int location, int len);

} // namespace ck
