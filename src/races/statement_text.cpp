#include "races/statement_text.hpp"

extern "C" {
#include "mb/pg_wchar.h"
}

#include <cstring>

namespace ck {

void statement_text(char *out, const char *source, int location, int len)
{
    out[0] = '\0';
    if (source == nullptr)
        return;
    size_t total = strlen(source);
    const char *at = source;
    size_t n = total;
    if (location >= 0 && static_cast<size_t>(location) <= total) {
        at = source + location;
        n = len > 0 && static_cast<size_t>(location + len) <= total ? static_cast<size_t>(len) : total - location;
    }
    int o = 0;
    bool space = true;   // drops leading whitespace too
    for (size_t i = 0; i < n && o < race_text_size - 1;) {
        unsigned char c = static_cast<unsigned char>(at[i]);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (!space)
                out[o++] = ' ';
            space = true;
            i++;
            continue;
        }
        int w = pg_mblen(at + i);
        if (o + w > race_text_size - 1 || i + w > n)
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
