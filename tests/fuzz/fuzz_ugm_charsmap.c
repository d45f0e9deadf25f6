/* libFuzzer target: Unigram (T5/UGM) tokenization with hostile precompiled
 * charsmaps.  The vocabulary is ../shared's XLM-R one
 * (ggml-vocab-nomic-bert-moe.gguf, TPORT_SHARED_DIR) when present, else a
 * few pieces built here.  Even first byte: its real charsmap with up to 15
 * bytes patched (u32 offset, value: 5 input bytes each), so the walk gets
 * deep into a real double array before it meets a broken unit; odd: the
 * charsmap is the input's (u32 length, bytes).  The rest is the text.
 * A call either fails with an error (malformed charsmap) or gives ids in
 * range, counted the same with and without an output buffer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/tokenizer_impl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tport_tokenizer *tk;
static uint8_t *real;
static size_t real_size;

static tport_tokenizer *small_vocab(void) {
    static const char *const pieces[] = {"<pad>", "</s>", "<unk>", "\xe2\x96\x81", "a", "b",
                                         "\xe2\x96\x81\x61" /* U+2581 a */, "ab", "<u>"};
    static const int32_t types[] = {TPORT_TOKEN_CONTROL, TPORT_TOKEN_CONTROL, TPORT_TOKEN_UNKNOWN,
                                    TPORT_TOKEN_NORMAL, TPORT_TOKEN_NORMAL, TPORT_TOKEN_NORMAL,
                                    TPORT_TOKEN_NORMAL, TPORT_TOKEN_NORMAL, TPORT_TOKEN_USER_DEFINED};
    const int32_t n = (int32_t)(sizeof pieces / sizeof pieces[0]);
    tport_tokenizer *t = tport_tokenizer_alloc(n);
    if (!t)
        return NULL;
    t->kind = TPORT_TOK_UGM;
    t->unk = 2;
    t->eos = 1;
    t->ugm_merge_spaces = true;
    for (int32_t i = 0; i < n; i++) {
        t->len[i] = (uint32_t)strlen(pieces[i]);
        t->text[i] = strdup(pieces[i]);
        t->type[i] = types[i];
        t->score[i] = -(float)i;
        if (t->len[i] > t->max_token_len)
            t->max_token_len = t->len[i];
    }
    tport_tokenizer_attrs_from_types(t);
    if (tport_tokenizer_index(t) != TPORT_STATUS_OK || tport_tokenizer_index_special(t) != TPORT_STATUS_OK) {
        tport_tokenizer_free(t);
        return NULL;
    }
    tport_ugm_finish(t);
    return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *dir = getenv("TPORT_SHARED_DIR") ? getenv("TPORT_SHARED_DIR") : "../shared";
    char path[1024];
    snprintf(path, sizeof path, "%s/models/vocab/ggml-vocab-nomic-bert-moe.gguf", dir);
    tk = tport_tokenizer_load(path);
    if (tk && tk->charsmap) {
        real_size = tk->charsmap_size;
        real = malloc(real_size);
        if (real)
            memcpy(real, tk->charsmap, real_size);
    } else {
        tport_tokenizer_free(tk);
        tk = small_vocab();
    }
    return 0;
}

static uint32_t u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!tk || size < 2)
        return 0;
    uint8_t *cm = NULL;
    size_t cm_size = 0, at;
    if (!(data[0] & 1) && real) {
        size_t patches = data[1] % 16;
        at = 2;
        if (size < at + 5 * patches)
            return 0;
        cm = malloc(real_size);
        if (!cm)
            return 0;
        memcpy(cm, real, real_size);
        cm_size = real_size;
        for (size_t k = 0; k < patches; k++, at += 5)
            cm[u32le(data + at) % real_size] = data[at + 4];
    } else {
        if (size < 5)
            return 0;
        cm_size = u32le(data + 1);
        at = 5;
        if (cm_size > size - at)
            cm_size = size - at;
        cm = malloc(cm_size ? cm_size : 1);
        if (!cm)
            return 0;
        memcpy(cm, data + at, cm_size);
        at += cm_size;
    }
    tport_status st = tport_ugm_set_charsmap(tk, cm, cm_size);
    free(cm);
    if (st != TPORT_STATUS_OK)
        return 0; /* refused at load */
    const char *text = (const char *)data + at;
    size_t len = size - at;
    int32_t n = tport_tokenizer_tokenize(tk, text, len, true, true, NULL, 0);
    if (n < 0)
        return 0; /* malformed charsmap (or out of memory) */
    tport_token *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    if (!ids)
        return 0;
    if (tport_tokenizer_tokenize(tk, text, len, true, true, ids, n) != n)
        abort();
    for (int32_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= tk->n_tokens)
            abort();
    free(ids);
    return 0;
}
