/* tport quantize: raw little-endian f32 values in, raw blocks of any type
 * and layout revision out, with any historical quantizer rule.
 *
 *   tport quantize --type T [--rule R] [--rows N] IN.f32 OUT
 *   tport quantize --list-rules [--type T]
 *
 * With --rows N the input is N rows of equal length, each a multiple of the
 * block size, quantized row by row (as ggml's tools do); without it the
 * whole input is one row.  Any error: one line "tport: ..." and exit 2. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tport/tport.h"

#define MAX_INPUT_BYTES ((size_t)1 << 34) /* refuse absurd inputs */
#define MAX_TYPE_ID 1024                   /* type ids are below this */

static void usage(FILE *out) {
    fprintf(out,
            "usage: tport quantize --type T [--rule R] [--rows N] IN.f32 OUT\n"
            "       tport quantize --list-rules [--type T]\n\n"
            "Quantizes raw little-endian f32 values (IN.f32) to raw blocks of type T\n"
            "(any type or layout revision of `tport types`, e.g. q4_0, q4_0_qnt0).\n\n"
            "  --type T       the target type\n"
            "  --rule R       the quantizer rule (default: the type's default rule);\n"
            "                 historical layouts had several, see --list-rules\n"
            "  --rows N       the input is N rows of equal length, quantized row by row\n"
            "  --list-rules   every type's rules (oldest first) with the period they were\n"
            "                 in use; the last, marked [default], is used without --rule\n"
            "  --help         this text\n");
}

static int list_rules(const char *type_name) {
    int64_t only = -1;
    if (type_name && (only = tport_type_from_name(type_name)) < 0)
        return tool_fail(2, "unknown type '%s' (see tport types)", type_name);
    for (uint32_t id = 0; id < MAX_TYPE_ID; id++) {
        if (only >= 0 && id != (uint32_t)only)
            continue;
        const tport_type_info *info = tport_type_get(id);
        const int n = tport_quant_rule_count(id);
        if (!info || n == 0) {
            if (only >= 0)
                printf("%s: no quantizer (decode only)\n", type_name);
            continue;
        }
        printf("%s\n", info->name);
        /* Rules come oldest first; the last one is the default. */
        for (int i = 0; i < n; i++)
            printf("  %-14s %s%s\n", tport_quant_rule_name(id, i), i == n - 1 ? "[default] " : "",
                   tport_quant_rule_about(id, i));
    }
    return 0;
}

/* Strict decimal parse of a positive count. */
static int parse_rows(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    const long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v <= 0)
        return -1;
    *out = v;
    return 0;
}

int cmd_quantize(int argc, char **argv) {
    const char *type_name = NULL, *rule = NULL, *rows_arg = NULL, *paths[2] = {NULL, NULL};
    int list = 0, npaths = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--list-rules")) {
            list = 1;
        } else if (!strcmp(a, "--type") || !strcmp(a, "--rule") || !strcmp(a, "--rows")) {
            if (i + 1 >= argc)
                return tool_fail(2, "quantize: %s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--type"))
                type_name = v;
            else if (!strcmp(a, "--rule"))
                rule = v;
            else
                rows_arg = v;
        } else if (a[0] == '-' && a[1]) {
            return tool_fail(2, "quantize: unknown option '%s' (see tport quantize --help)", a);
        } else if (npaths < 2) {
            paths[npaths++] = a;
        } else {
            return tool_fail(2, "quantize: too many arguments");
        }
    }
    if (list)
        return npaths ? tool_fail(2, "quantize: --list-rules takes no files") : list_rules(type_name);
    if (!type_name || npaths != 2)
        return tool_fail(2, "quantize: usage: tport quantize --type T [--rule R] [--rows N] IN.f32 OUT");

    const int64_t type = tport_type_from_name(type_name);
    const tport_type_info *info = type >= 0 ? tport_type_get((tport_type_id)type) : NULL;
    if (!info)
        return tool_fail(2, "quantize: unknown type '%s' (see tport types)", type_name);
    if (tport_quant_rule_count((tport_type_id)type) == 0)
        return tool_fail(2, "quantize: type %s has no quantizer", info->name);
    if (rule) {
        int found = 0;
        for (int i = 0; i < tport_quant_rule_count((tport_type_id)type); i++)
            found |= !strcmp(tport_quant_rule_name((tport_type_id)type, i), rule);
        if (!found)
            return tool_fail(2, "quantize: type %s has no rule '%s' (see tport quantize --list-rules --type %s)",
                             info->name, rule, info->name);
    }
    int64_t rows = 1;
    if (rows_arg && parse_rows(rows_arg, &rows))
        return tool_fail(2, "quantize: --rows needs a positive number, not '%s'", rows_arg);

    size_t size = 0;
    float *src = tool_read_all(paths[0], MAX_INPUT_BYTES, &size);
    if (!src)
        return 2;
    int rc = 0;
    void *dst = NULL;
    const int64_t n = (int64_t)(size / sizeof(float));
    const int64_t bs = info->block_size;
    if (size % sizeof(float)) {
        rc = tool_fail(2, "quantize: '%s' is %zu bytes, not a whole number of f32 values", paths[0], size);
    } else if (n % rows) {
        rc = tool_fail(2, "quantize: %lld values do not split into %lld equal rows", (long long)n, (long long)rows);
    } else if (n == 0 || (n / rows) % bs) {
        rc = tool_fail(2, "quantize: a row of %lld values is not a (non-zero) multiple of %s's block size %lld",
                       (long long)(n / rows), info->name, (long long)bs);
    } else {
        const int64_t row_len = n / rows;
        const size_t row_bytes = (size_t)(row_len / bs) * info->block_bytes;
        dst = malloc(row_bytes * (size_t)rows);
        if (!dst)
            rc = tool_fail(2, "quantize: out of memory");
        for (int64_t r = 0; !rc && r < rows; r++)
            if (tport_quantize((tport_type_id)type, rule, src + r * row_len, (char *)dst + (size_t)r * row_bytes,
                               row_len))
                rc = tool_fail(2, "quantize: %s", tport_last_error());
        if (!rc && tool_write_all(paths[1], dst, row_bytes * (size_t)rows))
            rc = 2;
    }
    free(dst);
    free(src);
    return rc;
}
