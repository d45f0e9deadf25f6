/* UTF-8 for JSON: model output may hold any bytes (byte tokens, cut
 * sequences); what goes into a JSON string must be valid UTF-8. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

char *utf8_clean(const char *s, size_t n) {
    char *out = malloc(3 * n + 1); /* each bad byte may become 3 bytes */
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        bool ok = len > 0 && i + len <= n && !(len == 2 && c < 0xC2);
        for (size_t k = 1; ok && k < len; k++)
            ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
        if (ok && len == 3) {
            unsigned char c1 = (unsigned char)s[i + 1];
            ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0); /* overlong, surrogates */
        }
        if (ok && len == 4) {
            unsigned char c1 = (unsigned char)s[i + 1];
            ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90) && c <= 0xF4;
        }
        if (ok && c == 0) /* JSON strings may carry NUL, but C strings cannot */
            ok = false;
        if (ok) {
            memcpy(out + o, s + i, len);
            o += len;
            i += len;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    out[o] = 0;
    return out;
}
