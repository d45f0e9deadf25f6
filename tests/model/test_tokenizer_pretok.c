/* Pre-tokenizers llama.cpp's suite has no vocabulary for (DeepSeek LLM
 * and Coder, BLOOM, Viking, Command-R, ChatGLM, DBRX, OLMo, StableLM2,
 * default, DeepSeek V3, Hunyuan dense, JoyAI, Grok 2, Laguna, AFMoE, Tiny
 * Aya, Cohere2 MoE, Seed-Coder, Ling, LLaDA MoE, MiniCPM 5): the GPT-2
 * vocabulary with tokenizer.ggml.pre replaced, against
 * llama.cpp's ids for the same files (data/tokenizer_pretok_refs.json, made
 * by data/make_tokenizer_pretok_refs.mjs, which splices the name the same
 * way). */
#include <stdint.h>
#include <unistd.h>

#include "../test_util.h"
#include "json_min.h"
#include "tport/tport.h"

static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = sz > 0 ? malloc((size_t)sz) : NULL;
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = b ? (size_t)sz : 0;
    return b;
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Writes src with the string value of tokenizer.ggml.pre replaced. */
static int write_with_pre(const unsigned char *src, size_t n, const char *pre, const char *path) {
    static const char key[] = "tokenizer.ggml.pre";
    const size_t kl = sizeof key - 1;
    for (size_t i = 0; i + 8 + kl + 12 <= n; i++) {
        if (le64(src + i) != kl || memcmp(src + i + 8, key, kl) != 0)
            continue;
        size_t j = i + 8 + kl; /* u32 type 8 (string), u64 length, bytes */
        uint64_t old = le64(src + j + 4);
        if (src[j] != 8 || old > n - (j + 12))
            return -1;
        FILE *f = fopen(path, "wb");
        if (!f)
            return -1;
        uint64_t pl = strlen(pre);
        unsigned char len[8];
        for (int b = 0; b < 8; b++)
            len[b] = (unsigned char)(pl >> (8 * b));
        fwrite(src, 1, j + 4, f);
        fwrite(len, 1, 8, f);
        fwrite(pre, 1, (size_t)pl, f);
        fwrite(src + j + 12 + old, 1, n - (j + 12 + (size_t)old), f);
        return fclose(f) == 0 ? 0 : -1;
    }
    return -1;
}

int main(void) {
    char gpt2[1024];
    if (!test_shared_path("models/vocab/ggml-vocab-gpt-2.gguf", gpt2, sizeof gpt2))
        test_skip("test_tokenizer_pretok", "../shared/models/vocab absent");
    json *refs = json_load(TPORT_MODEL_TEST_DATA "/tokenizer_pretok_refs.json");
    CHECK(refs != NULL, "cannot read tokenizer_pretok_refs.json");
    const json *texts = refs ? json_get(refs, "texts") : NULL, *ids = refs ? json_get(refs, "ids") : NULL;
    size_t n = 0;
    unsigned char *src = read_file(gpt2, &n);
    CHECK(src != NULL, "cannot read %s", gpt2);
    const char *tdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[1100];
    snprintf(path, sizeof path, "%s/tport_pretok_%d.gguf", tdir, (int)getpid());
    for (size_t p = 0; src && texts && ids && p < ids->n; p++) {
        const char *pre = ids->keys[p];
        const json *want = &ids->items[p];
        CHECK(write_with_pre(src, n, pre, path) == 0, "%s: cannot write %s", pre, path);
        tport_tokenizer *tk = tport_tokenizer_load(path);
        CHECK(tk != NULL, "%s: %s", pre, tport_last_error());
        int ok = 0;
        for (size_t i = 0; tk && i < texts->n && i < want->n; i++) {
            const json *t = &texts->items[i], *w = &want->items[i];
            tport_token got[1024];
            int32_t k = tport_tokenizer_tokenize(tk, t->str, t->str_len, false, false, got, 1024);
            int same = k == (int32_t)w->n;
            for (int32_t j = 0; same && j < k; j++)
                same = got[j] == (tport_token)w->items[j].number;
            CHECK(same, "%s: text %zu: %d ids, want %d", pre, i, (int)k, (int)w->n);
            ok += same;
        }
        printf("%s: %d/%zu strings match llama.cpp\n", pre, ok, texts->n);
        tport_tokenizer_free(tk);
    }
    remove(path);
    CHECK(ids && ids->n == 30, "thirty pre-tokenizers");
    free(src);
    json_free(refs);
    return test_finish("test_tokenizer_pretok");
}
