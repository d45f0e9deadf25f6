/* JSON output helpers shared by the subcommands. */
#include <stdio.h>

#include "commands.h"

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if invalid. */
static int utf8_len(const unsigned char *p) {
    int n = p[0] < 0x80 ? 1 : (p[0] >> 5) == 6 ? 2 : (p[0] >> 4) == 14 ? 3 : (p[0] >> 3) == 30 ? 4 : 0;
    if (n == 0 || (n == 2 && p[0] < 0xc2) || (n == 4 && p[0] > 0xf4))
        return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((n == 3 && p[0] == 0xe0 && p[1] < 0xa0) || (n == 3 && p[0] == 0xed && p[1] >= 0xa0) ||
        (n == 4 && p[0] == 0xf0 && p[1] < 0x90) || (n == 4 && p[0] == 0xf4 && p[1] >= 0x90))
        return 0; /* overlong, surrogate, beyond U+10FFFF */
    return n;
}

/* JSON string: quotes, backslashes and control bytes escaped; bytes that
 * are not valid UTF-8 (model files hold anything) become U+FFFD. */
void tool_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        int n = utf8_len(p);
        if (n == 0) {
            fputs("\\ufffd", f);
            p++;
        } else if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p++);
        } else if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p++);
        } else {
            fwrite(p, 1, (size_t)n, f);
            p += n;
        }
    }
    fputc('"', f);
}
