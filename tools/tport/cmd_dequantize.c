/* tport dequantize --type T IN OUT.f32: raw blocks of any type and layout
 * revision in, raw little-endian f32 values out, with the reference
 * decoder.  Any error: one line "tport: ..." and exit 2. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tport/tport.h"

#define MAX_INPUT_BYTES ((size_t)1 << 32) /* decoded, up to ~8x larger */

static void usage(FILE *out) {
    fprintf(out,
            "usage: tport dequantize --type T IN OUT.f32\n\n"
            "Decodes raw blocks of type T (any type or layout revision of `tport types`)\n"
            "to raw little-endian f32 values.  IN must be a whole number of blocks.\n\n"
            "  --type T   the type of IN\n"
            "  --help     this text\n");
}

int cmd_dequantize(int argc, char **argv) {
    const char *type_name = NULL, *paths[2] = {NULL, NULL};
    int npaths = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--type")) {
            if (i + 1 >= argc)
                return tool_fail(2, "dequantize: --type needs a value");
            type_name = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return tool_fail(2, "dequantize: unknown option '%s' (see tport dequantize --help)", a);
        } else if (npaths < 2) {
            paths[npaths++] = a;
        } else {
            return tool_fail(2, "dequantize: too many arguments");
        }
    }
    if (!type_name || npaths != 2)
        return tool_fail(2, "dequantize: usage: tport dequantize --type T IN OUT.f32");
    const int64_t type = tport_type_from_name(type_name);
    const tport_type_info *info = type >= 0 ? tport_type_get((tport_type_id)type) : NULL;
    if (!info)
        return tool_fail(2, "dequantize: unknown type '%s' (see tport types)", type_name);

    size_t size = 0;
    void *src = tool_read_all(paths[0], MAX_INPUT_BYTES, &size);
    if (!src)
        return 2;
    int rc = 0;
    float *dst = NULL;
    if (size == 0 || size % info->block_bytes) {
        rc = tool_fail(2, "dequantize: '%s' is %zu bytes, not a (non-zero) multiple of %s's block of %llu bytes",
                       paths[0], size, info->name, (unsigned long long)info->block_bytes);
    } else {
        const int64_t n = (int64_t)(size / info->block_bytes) * info->block_size;
        dst = malloc((size_t)n * sizeof(float));
        if (!dst)
            rc = tool_fail(2, "dequantize: out of memory");
        else if (tport_dequantize((tport_type_id)type, src, dst, n))
            rc = tool_fail(2, "dequantize: %s", tport_last_error());
        else if (tool_write_all(paths[1], dst, (size_t)n * sizeof(float)))
            rc = 2;
    }
    free(dst);
    free(src);
    return rc;
}
