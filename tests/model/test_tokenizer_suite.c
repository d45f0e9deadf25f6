/* llama.cpp's own tokenizer regression suite (../shared/models/vocab, see
 * its README): every vocabulary-only GGUF file with its .inp test strings
 * and the ids llama.cpp's tokenizer gave for them (.out, add_special =
 * false, parse_special = false, as llama.cpp's tests/test-tokenizer-0.cpp
 * does).  Every string of every file must give exactly those ids.  Then:
 * concatenated pieces give the text back for valid UTF-8, and
 * ggml-vocab-gpt-neox.gguf (no test strings) loads and round-trips.
 * bert-bge's WordPiece lowercases and strips accents, so its pieces are
 * not checked to give the text back. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "tport/tport.h"

static const char *const SUITE[] = {"falcon",  "gpt-2",          "llama-bpe",    "llama-spm", "mpt",
                                    "phi-3",   "qwen2",          "starcoder",    "command-r", "deepseek-coder",
                                    "deepseek-llm", "gemma-4",   "qwen35",       "refact",    "bert-bge"};

static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[sz] = '\0';
        *n = (size_t)sz;
    }
    return buf;
}

/* Valid UTF-8 (what llama.cpp would decode without U+FFFD)? */
static int valid_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (k == 0 || i + k > n)
            return 0;
        for (size_t j = 1; j < k; j++)
            if (((unsigned char)s[i + j] & 0xC0) != 0x80)
                return 0;
        i += k;
    }
    return 1;
}

/* Pieces of ids, concatenated; the caller frees. */
static char *detokenize(const tport_tokenizer *tk, const tport_token *ids, int32_t n, size_t *len) {
    size_t cap = 64, k = 0;
    char *out = malloc(cap);
    for (int32_t i = 0; out && i < n; i++) {
        int32_t m = tport_tokenizer_piece(tk, i ? ids[i - 1] : -1, ids[i], NULL, 0);
        while (k + (size_t)m + 1 > cap) {
            cap *= 2;
            char *g = realloc(out, cap);
            if (!g) {
                free(out);
                return NULL;
            }
            out = g;
        }
        tport_tokenizer_piece(tk, i ? ids[i - 1] : -1, ids[i], out + k, m);
        k += (size_t)m;
    }
    *len = k;
    return out;
}

static int32_t parse_ids(const char *line, size_t n, tport_token *ids, int32_t cap) {
    int32_t k = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && line[i] == ' ')
            i++;
        if (i >= n)
            break;
        long v = strtol(line + i, NULL, 10);
        if (k < cap)
            ids[k] = (tport_token)v;
        k++;
        while (i < n && line[i] != ' ')
            i++;
    }
    return k;
}

/* Runs one vocabulary's strings; returns how many matched (-1: missing). */
static int run_file(const char *name, int *total) {
    char gguf[512], inp[560], outp[560];
    char rel[128];
    snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf", name);
    if (!test_shared_path(rel, gguf, sizeof gguf))
        return -1;
    snprintf(inp, sizeof inp, "%s.inp", gguf);
    snprintf(outp, sizeof outp, "%s.out", gguf);
    size_t ni = 0, no = 0;
    char *in = read_all(inp, &ni), *out = read_all(outp, &no);
    tport_tokenizer *tk = tport_tokenizer_load(gguf);
    CHECK(tk != NULL, "%s: %s", name, tport_last_error());
    CHECK(in && out, "%s: .inp/.out missing", name);
    int matched = 0;
    *total = 0;
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sl = sizeof sep - 1;
    size_t ip = 0, op = 0;
    tport_token *want = malloc(65536 * sizeof *want), *got = malloc(65536 * sizeof *got);
    while (tk && in && out && want && got && ip < ni) {
        const char *next = strstr(in + ip, sep);
        size_t len = next ? (size_t)(next - (in + ip)) : ni - ip;
        const char *text = in + ip;
        ip = next ? (size_t)(next - in) + sl : ni;
        const char *eol = memchr(out + op, '\n', no - op);
        size_t ol = eol ? (size_t)(eol - (out + op)) : no - op;
        int32_t nw = parse_ids(out + op, ol, want, 65536);
        op = eol ? (size_t)(eol - out) + 1 : no;
        int32_t ng = tport_tokenizer_tokenize(tk, text, len, false, false, got, 65536);
        (*total)++;
        int same = ng == nw && ng <= 65536 && memcmp(got, want, (size_t)ng * sizeof *got) == 0;
        matched += same;
        if (!same) {
            fprintf(stderr, "%s: string %d (%zu bytes): %d ids, want %d:", name, *total, len, (int)ng, (int)nw);
            for (int32_t i = 0; i < ng && i < 24; i++)
                fprintf(stderr, " %d", (int)got[i]);
            fprintf(stderr, " | want");
            for (int32_t i = 0; i < nw && i < 24; i++)
                fprintf(stderr, " %d", (int)want[i]);
            fputc('\n', stderr);
        }
        CHECK(same, "%s: string %d", name, *total);
        if (same && valid_utf8(text, len) && strcmp(name, "bert-bge")) {
            size_t dl = 0;
            char *back = detokenize(tk, got, ng, &dl);
            CHECK(back && dl == len && memcmp(back, text, len) == 0, "%s: string %d does not detokenize back",
                  name, *total);
            free(back);
        }
    }
    printf("%s: %d/%d strings match llama.cpp\n", name, matched, *total);
    free(want);
    free(got);
    free(in);
    free(out);
    tport_tokenizer_free(tk);
    return matched;
}

int main(void) {
    char probe[512];
    if (!test_shared_path("models/vocab/ggml-vocab-gpt-2.gguf", probe, sizeof probe))
        test_skip("test_tokenizer_suite", "../shared/models/vocab absent");
    int all = 0, all_total = 0;
    for (size_t i = 0; i < sizeof SUITE / sizeof SUITE[0]; i++) {
        int total = 0;
        int m = run_file(SUITE[i], &total);
        CHECK(m >= 0, "ggml-vocab-%s.gguf missing", SUITE[i]);
        CHECK(total >= 46 || m < 0, "%s: %d test strings, the suite has at least 46", SUITE[i], total);
        all += m > 0 ? m : 0;
        all_total += total;
    }
    printf("all: %d/%d\n", all, all_total);

    /* gpt-neox: no test strings; load it and check a round trip */
    char neox[512];
    if (test_shared_path("models/vocab/ggml-vocab-gpt-neox.gguf", neox, sizeof neox)) {
        tport_tokenizer *tk = tport_tokenizer_load(neox);
        CHECK(tk != NULL, "gpt-neox: %s", tport_last_error());
        const char *text = "Hello world!\n\tint main() { return 42; } // \xc3\xa9t\xc3\xa9";
        tport_token ids[128];
        int32_t n = tk ? tport_tokenizer_tokenize(tk, text, strlen(text), false, false, ids, 128) : -1;
        CHECK(n > 0 && n < (int32_t)strlen(text), "gpt-neox: %d ids", (int)n);
        size_t dl = 0;
        char *back = n > 0 ? detokenize(tk, ids, n, &dl) : NULL;
        CHECK(back && dl == strlen(text) && !memcmp(back, text, dl), "gpt-neox: round trip");
        free(back);
        tport_tokenizer_free(tk);
    }
    return test_finish("test_tokenizer_suite");
}
