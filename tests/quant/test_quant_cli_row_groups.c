/* GGUF files of the removed row-grouped types (Q4_0_4_4 .. IQ4_NL_4_4), as
 * late-2024 llama.cpp wrote them: `tport synth` Q4_0 / IQ4_NL files whose
 * 2-D weights this test rewrites in place into the interleaved layout and
 * type id (same byte count).  `tport info` names the types; `tport run
 * --temp 0` gives the same ids as the original; `tport convert` gives back
 * the original file byte for byte; a grouped tensor whose ne[1] is
 * not whole groups is refused with a clear error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test_util.h"
#include "formats/model_file.h"
#include "row_group_interleave.h"
#include "tport/tport.h"

/* Runs `tport <args>`; stdout (and stderr unless only_out) into buf. */
static int run_to(const char *args, char *buf, size_t cap, bool only_out) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s %s", TPORT_CLI_PATH, args, only_out ? "2>/dev/null" : "2>&1");
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(buf, 1, cap - 1, p);
    buf[n] = 0;
    const int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run(const char *args, char *buf, size_t cap) { return run_to(args, buf, cap, false); }

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = len > 0 ? malloc((size_t)len) : NULL;
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return p;
}

static bool write_all(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(p, 1, n, f) == n;
    if (f)
        fclose(f);
    return ok;
}

/* The u32 type field of tensor t's record in the header: after the name
 * (u64 length, bytes), n_dims (u32) and n_dims u64 dimensions. */
static uint8_t *type_field(uint8_t *file, size_t header_end, const tport_mf_tensor *t) {
    const size_t len = strlen(t->name);
    for (size_t at = 8; at + 8 + len + 4 < header_end; at++) {
        uint64_t l;
        memcpy(&l, file + at - 8, 8);
        if (l == len && !memcmp(file + at, t->name, len))
            return file + at + len + 4 + 8 * (size_t)t->n_dims;
    }
    return NULL;
}

/* Rewrites every 2-D `base` tensor of whole groups into layout (id, R,
 * bsi, xor); returns how many, or -1. */
static int regroup(const char *in, const char *out, tport_type_id base, uint32_t id, int R, int bsi,
                   uint8_t xor_mask) {
    size_t n;
    uint8_t *file = read_all(in, &n);
    tport_model_file *mf = NULL;
    if (!file || tport_model_file_open(in, &mf) != TPORT_STATUS_OK) {
        free(file);
        return -1;
    }
    int count = 0;
    for (int i = 0; i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        if (t->type != base || t->n_dims != 2 || t->ne[1] % R)
            continue;
        uint8_t *field = type_field(file, (size_t)mf->data_offset, t);
        CHECK(field && t->offset + t->nbytes <= n, "%s: header record", t->name);
        if (!field)
            continue;
        memcpy(field, &id, 4);
        interleave(t->data, t->ne[0], t->ne[1], R, bsi, xor_mask, file + t->offset);
        count++;
    }
    tport_model_file_close(mf);
    bool ok = write_all(out, file, n);
    free(file);
    return ok ? count : -1;
}

/* The tensors of b are those of a: names, types, bytes. */
static void same_tensors(const char *pa, const char *pb) {
    tport_model_file *a = NULL, *b = NULL;
    CHECK(tport_model_file_open(pa, &a) == TPORT_STATUS_OK && tport_model_file_open(pb, &b) == TPORT_STATUS_OK,
          "open %s, %s: %s", pa, pb, tport_last_error());
    for (int i = 0; a && b && i < a->n_tensors; i++) {
        const tport_mf_tensor *x = &a->tensors[i], *y = tport_model_file_find(b, x->name);
        CHECK(y && y->type == x->type && y->nbytes == x->nbytes && !memcmp(y->data, x->data, (size_t)x->nbytes),
              "%s: tensor %s differs after convert", pb, x->name);
    }
    CHECK(a && b && a->n_tensors == b->n_tensors, "tensor counts");
    tport_model_file_close(a);
    tport_model_file_close(b);
}

static const struct {
    const char *base_name, *name;
    tport_type_id base;
    uint32_t id;
    int R, bsi;
    uint8_t xor_mask;
} cases[] = {
    {"q4_0", "q4_0_4x4", TPORT_TYPE_Q4_0, 31, 4, 4, 0x88},
    {"q4_0", "q4_0_4x8", TPORT_TYPE_Q4_0, 32, 4, 8, 0x88},
    {"q4_0", "q4_0_8x8", TPORT_TYPE_Q4_0, 33, 8, 8, 0x88},
    {"iq4_nl", "iq4_nl_4x4", TPORT_TYPE_IQ4_NL, 36, 4, 4, 0x00},
};

int main(void) {
    static char out[1 << 16], ids_a[4096], ids_b[4096];
    char dir[] = "/tmp/tport_rowgroups_XXXXXX", base[128], grouped[128], conv[128], args[1024];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        snprintf(base, sizeof base, "%s/%s.gguf", dir, cases[c].base_name);
        snprintf(grouped, sizeof grouped, "%s/%s.gguf", dir, cases[c].name);
        snprintf(conv, sizeof conv, "%s/%s.back.gguf", dir, cases[c].name);
        snprintf(args, sizeof args, "synth --type %s --seed 3 -o %s", cases[c].base_name, base);
        CHECK(run(args, out, sizeof out) == 0, "%s\n%s", args, out);
        const int n = regroup(base, grouped, cases[c].base, cases[c].id, cases[c].R, cases[c].bsi,
                              cases[c].xor_mask);
        CHECK(n >= 7, "%s: %d tensors regrouped", cases[c].name, n);
        snprintf(args, sizeof args, "info %s", grouped);
        CHECK(run(args, out, sizeof out) == 0 && strstr(out, cases[c].name), "info names %s:\n%s", cases[c].name,
              out);
        snprintf(args, sizeof args, "run -m %s --prompt-ids 1,2,3 -n 8 --ids --temp 0", base);
        int ra = run_to(args, ids_a, sizeof ids_a, true);
        snprintf(args, sizeof args, "run -m %s --prompt-ids 1,2,3 -n 8 --ids --temp 0", grouped);
        int rb = run_to(args, ids_b, sizeof ids_b, true);
        CHECK(ra == 0 && rb == 0 && strchr(ids_a, ',') && !strcmp(ids_a, ids_b), "%s: greedy ids differ:\n%s\nvs\n%s",
              cases[c].name, ids_a, ids_b);
        snprintf(args, sizeof args, "convert %s %s", grouped, conv);
        CHECK(run(args, out, sizeof out) == 0 && strstr(out, "lossless"), "%s: convert\n%s", cases[c].name, out);
        same_tensors(base, conv);
        /* and the whole file: tport convert of a synth file writes it back
         * byte for byte, so the converted file is the original */
        size_t na = 0, nb = 0;
        uint8_t *fa = read_all(base, &na), *fb = read_all(conv, &nb);
        CHECK(fa && fb && na == nb && !memcmp(fa, fb, na), "%s: converted file differs from %s", conv, base);
        free(fa), free(fb);
        unlink(grouped), unlink(conv);
    }
    /* a 1-D f32 tensor marked q4_0_4x4: ne[1] = 1 is not whole groups */
    snprintf(base, sizeof base, "%s/q4_0.gguf", dir);
    snprintf(grouped, sizeof grouped, "%s/bad.gguf", dir);
    size_t n;
    uint8_t *file = read_all(base, &n);
    tport_model_file *mf = NULL;
    CHECK(file && tport_model_file_open(base, &mf) == TPORT_STATUS_OK, "open %s", base);
    for (int i = 0; mf && i < mf->n_tensors; i++)
        if (mf->tensors[i].n_dims == 1) {
            uint8_t *field = type_field(file, (size_t)mf->data_offset, &mf->tensors[i]);
            const uint32_t id = TPORT_TYPE_Q4_0_4_4;
            if (field)
                memcpy(field, &id, 4);
            break;
        }
    tport_model_file_close(mf);
    CHECK(file && write_all(grouped, file, n), "write %s", grouped);
    free(file);
    snprintf(args, sizeof args, "info %s", grouped);
    CHECK(run(args, out, sizeof out) != 0 && strstr(out, "groups of 4"), "refused with a reason:\n%s", out);
    unlink(grouped);
    snprintf(base, sizeof base, "%s/q4_0.gguf", dir);
    unlink(base);
    snprintf(base, sizeof base, "%s/iq4_nl.gguf", dir);
    unlink(base);
    rmdir(dir);
    return test_finish("test_quant_cli_row_groups");
}
