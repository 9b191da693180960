#include "base/statement_text.hpp"

extern "C" {
#include "mb/pg_wchar.h"
#include "parser/scansup.h"
}

#include <cstring>

namespace ck {

void statement_text(char *out, size_t size, const char *source, int location, int len)
{
    if (size == 0)
        return;
    out[0] = '\0';
    if (source == nullptr)
        return;
    size_t total = strlen(source);
    const char *at = source;
    size_t n = total;
    if (location >= 0 && static_cast<size_t>(location) <= total) {
        at = source + location;
        n = len > 0 && static_cast<size_t>(location) + len <= total ? static_cast<size_t>(len) : total - location;
    }
    size_t o = 0;
    bool space = true;   // drops leading white space too
    char quote = '\0';
    for (size_t i = 0; i < n;) {
        unsigned char c = static_cast<unsigned char>(at[i]);
        if (quote == '\0' && scanner_isspace(static_cast<char>(c))) {
            if (!space && o < size - 1)
                out[o++] = ' ';
            space = true;
            i++;
            continue;
        }
        if (quote != '\0' && c == static_cast<unsigned char>(quote))
            quote = '\0';
        else if (quote == '\0' && (c == '\'' || c == '"'))
            quote = static_cast<char>(c);
        size_t w = static_cast<size_t>(pg_mblen(at + i));
        if (o + w > size - 1 || i + w > n)
            break;
        memcpy(out + o, at + i, w);
        o += w;
        i += w;
        space = false;
    }
    while (o > 0 && (out[o - 1] == ' ' || out[o - 1] == ';'))
        o--;
    out[o] = '\0';
}

} // namespace ck
