// One statement's text out of the string it came in (a multi-statement query, a function
// body), on one line and cut to fit a report.
#pragma once

#include "base/pg.hpp"

namespace ck {

constexpr int race_text_size = 256;

// Copies the statement at location (-1: unknown, the whole source) of length len (0: to the
// end) into out (race_text_size bytes), whitespace runs as one space, cut at a character.
void statement_text(char *out, const char *source, int location, int len);

} // namespace ck
