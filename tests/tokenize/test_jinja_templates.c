/* Renders every case jinja_reference.py wrote (each real chat template
 * with each conversation) through tport_template_render and compares with
 * Python jinja2's bytes; where Python raised, tport must fail as well.
 * Usage: test_jinja_templates CASE_DIR [-v] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tport/tport.h"

#define NOW 1768478400 /* the time jinja_reference.py fixes */

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *p = malloc(cap);
    for (size_t k; p && (k = fread(p + len, 1, cap - len - 1, f)) > 0;) {
        len += k;
        if (cap - len < 2) {
            char *g = realloc(p, cap *= 2);
            if (!g) {
                free(p);
                p = NULL;
            } else
                p = g;
        }
    }
    fclose(f);
    if (p) {
        p[len] = 0;
        if (n)
            *n = len;
    }
    return p;
}

static void show_diff(const char *want, size_t wn, const char *got, size_t gn) {
    size_t i = 0;
    while (i < wn && i < gn && want[i] == got[i])
        i++;
    size_t from = i > 60 ? i - 60 : 0;
    printf("    first difference at byte %zu\n    want: %.*s\n    got:  %.*s\n", i, (int)(wn - from < 160 ? wn - from : 160),
           want + from, (int)(gn - from < 160 ? gn - from : 160), got + from);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CASE_DIR [-v]\n", argv[0]);
        return 2;
    }
    bool verbose = argc > 2 && !strcmp(argv[2], "-v");
    char path[4096];
    snprintf(path, sizeof path, "%s/cases.txt", argv[1]);
    FILE *list = fopen(path, "r");
    if (!list) {
        fprintf(stderr, "no %s\n", path);
        return 1;
    }
    char line[4096];
    int total = 0, passed = 0, errors_expected = 0;
    tport_template_limits lim = {.now = NOW};
    while (fgets(line, sizeof line, list)) {
        char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        if (!tab2)
            continue;
        *tab1 = *tab2 = 0;
        char *tmpl_path = line, *c = tab1 + 1, *ext = tab2 + 1;
        ext[strcspn(ext, "\r\n")] = 0;
        size_t tn, wn = 0, gn = 0;
        char *tmpl = slurp(tmpl_path, &tn);
        snprintf(path, sizeof path, "%s/%s.json", argv[1], c);
        char *ctx = slurp(path, NULL);
        snprintf(path, sizeof path, "%s/%s.%s", argv[1], c, ext);
        char *want = slurp(path, &wn);
        if (!tmpl || !ctx || !want) {
            printf("FAIL %s: cannot read the case files\n", c);
            total++;
            continue;
        }
        char *got = tport_template_render(tmpl, tn, ctx, &lim, &gn);
        bool want_err = !strcmp(ext, "err");
        bool ok = want_err ? got == NULL : got && gn == wn && !memcmp(got, want, wn);
        total++;
        passed += ok;
        errors_expected += want_err;
        if (!ok) {
            printf("FAIL %s\n", c);
            if (want_err)
                printf("    Python raised %s    tport rendered %zu bytes\n", want, gn);
            else if (!got)
                printf("    tport failed: %s\n", tport_last_error());
            else if (verbose)
                show_diff(want, wn, got, gn);
            else
                show_diff(want, wn, got, gn);
        } else if (verbose)
            printf("ok   %s%s%s\n", c, want_err ? " (both fail: " : "", want_err ? tport_last_error() : "");
        if (verbose && ok && want_err)
            printf(")\n");
        free(got);
        free(tmpl);
        free(ctx);
        free(want);
    }
    fclose(list);
    printf("%d of %d template renderings match Python jinja2 (%d of them expected errors)\n", passed, total, errors_expected);
    return passed == total ? 0 : 1;
}
