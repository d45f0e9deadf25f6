/* Whole-file reading and writing for the commands that take raw data
 * (quantize, dequantize).  Errors are printed as one "tport: ..." line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

void *tool_read_all(const char *path, size_t max_bytes, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        tool_fail(2, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    /* Grow by doubling; stop once the buffer would pass max_bytes. */
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    int oom = !buf, big = 0;
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        if (cap >= max_bytes) {
            big = 1;
            break;
        }
        unsigned char *grown = realloc(buf, cap * 2);
        if (!grown) {
            oom = 1;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    const int err = ferror(f);
    fclose(f);
    if (oom || big || err) {
        free(buf);
        tool_fail(2, "cannot read '%s': %s", path, oom ? "out of memory" : big ? "too large" : "read error");
        return NULL;
    }
    *size = n;
    return buf;
}

int tool_write_all(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return tool_fail(2, "cannot create '%s': %s", path, strerror(errno));
    const int ok = fwrite(data, 1, n, f) == n;
    if (fclose(f) != 0 || !ok)
        return tool_fail(2, "cannot write '%s'", path);
    return 0;
}
