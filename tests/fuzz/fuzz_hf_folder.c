/* libFuzzer target: Hugging Face folders.  The input is seven files,
 * each a u32 little-endian length and that many bytes: config.json,
 * tokenizer.json, tokenizer_config.json, model.safetensors,
 * tokenizer.model, modules.json and pool/config.json (sentence-
 * transformers' pooling, read for encoders; a length of 0, or a missing
 * one, means an absent file), written to a private folder that is then
 * opened as a model and as a tokenizer.  A model that opens must describe
 * tensors inside memory it owns or maps (their first and last bytes are
 * read, for ASan) and a vocabulary whose ids are in range; a tokenizer
 * that loads must tokenize a short text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/model_file.h"
#include "tport/tport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { N_FILES = 7 };
static const char *const NAMES[N_FILES] = {"config.json",     "tokenizer.json", "tokenizer_config.json",
                                           "model.safetensors", "tokenizer.model", "modules.json",
                                           "pool/config.json"};
static char dir[64];

static void clean(void) {
    char path[128];
    for (int k = 0; k < N_FILES; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, NAMES[k]);
        unlink(path);
    }
}

static void remove_dir(void) {
    char pool[128];
    clean();
    snprintf(pool, sizeof pool, "%s/pool", dir);
    rmdir(pool);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%.40s/tport-fuzz-hf-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        char pool[128];
        if (!mkdtemp(dir))
            abort();
        snprintf(pool, sizeof pool, "%s/pool", dir);
        if (mkdir(pool, 0700) != 0)
            abort();
        atexit(remove_dir);
    }
    clean();
    size_t at = 0;
    char path[128];
    for (int k = 0; k < N_FILES && at + 4 <= size; k++) {
        uint32_t len = (uint32_t)data[at] | (uint32_t)data[at + 1] << 8 | (uint32_t)data[at + 2] << 16 |
                       (uint32_t)data[at + 3] << 24;
        at += 4;
        if (len > size - at)
            len = (uint32_t)(size - at);
        if (!len)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, NAMES[k]);
        FILE *f = fopen(path, "wb");
        if (!f)
            abort();
        if (len && fwrite(data + at, 1, len, f) != len)
            abort();
        fclose(f);
        at += len;
    }
    tport_model_file *mf = NULL;
    if (tport_model_file_open(dir, &mf) == TPORT_STATUS_OK) {
        volatile uint8_t sink = 0;
        for (int i = 0; i < mf->n_tensors; i++) {
            const tport_mf_tensor *t = &mf->tensors[i];
            if (t->nbytes)
                sink ^= ((const uint8_t *)t->data)[0] ^ ((const uint8_t *)t->data)[t->nbytes - 1];
        }
        const tport_vocab *v = &mf->vocab;
        for (int32_t i = 0; i < v->n_tokens; i++)
            sink ^= (uint8_t)v->tokens[i][0];
        if (v->bos >= v->n_tokens || v->eos >= v->n_tokens || v->unk >= v->n_tokens)
            abort();
        (void)sink;
        tport_model_file_close(mf);
    }
    tport_tokenizer *tk = tport_tokenizer_load(dir);
    if (tk) {
        tport_token ids[64];
        static const char text[] = "Hello world, 3 tokens <s> \xe2\x96\x81 \xc4\xa0";
        if (tport_tokenizer_tokenize(tk, text, sizeof text - 1, true, true, ids, 64) < 0)
            abort();
        tport_tokenizer_free(tk);
    }
    return 0;
}
