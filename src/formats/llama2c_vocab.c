/* llama2.c's tokenizer.bin (i32 max_token_length, then per token: f32
 * score, i32 length, bytes) as the vocabulary of a model file that has
 * none, e.g. a llama2.c checkpoint on its way to GGUF.  llama2.c's
 * tokenizer.py wrote SentencePiece pieces with '\xe2\x96\x81' (U+2581) replaced
 * by ' ' and BOS/EOS as "\n<s>\n" / "\n</s>\n"; that is undone here so the
 * vocabulary reads as the SentencePiece one GGUF files carry. */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/mf_internal.h"

static tport_status parse(tport_model_file *mf, mf_cursor *c, int32_t n) {
    tport_vocab *v = &mf->vocab;
    int32_t max_len;
    MF_TRY(mf_read_i32(c, &max_len, "max_token_length"));
    if (max_len <= 0)
        return mf_fail(c, 0, "max_token_length %d is not positive", max_len);
    if ((uint64_t)n > mf_left(c) / 8)
        return mf_fail(c, 4, "%d tokens cannot fit in the %llu bytes left", n, (unsigned long long)mf_left(c));
    char **tokens = mf_alloc_array(mf, (uint64_t)n, sizeof(char *));
    uint32_t *lens = mf_alloc_array(mf, (uint64_t)n, sizeof(uint32_t));
    float *scores = mf_alloc_array(mf, (uint64_t)n, sizeof(float));
    if (!tokens || !lens || !scores)
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (int32_t i = 0; i < n; i++) {
        int32_t len;
        const uint8_t *p;
        uint64_t at = c->pos;
        MF_TRY(mf_read_f32(c, &scores[i], "token score"));
        MF_TRY(mf_read_i32(c, &len, "token length"));
        if (len < 0 || len > max_len || (uint64_t)len > mf_left(c))
            return mf_fail(c, at + 4, "token %d: length %d is invalid", i, len);
        MF_TRY(mf_read_bytes(c, (uint64_t)len, &p, "token text"));
        if ((len == 5 && !memcmp(p, "\n<s>\n", 5)) || (len == 6 && !memcmp(p, "\n</s>\n", 6))) {
            p++;
            len -= 2;
        }
        char *t = mf_alloc(mf, (size_t)len * 3 + 1);
        if (!t)
            return TPORT_STATUS_OUT_OF_MEMORY;
        size_t n_out = 0;
        for (int32_t k = 0; k < len; k++) {
            if (p[k] == ' ') {
                memcpy(t + n_out, "\xe2\x96\x81", 3);
                n_out += 3;
            } else {
                t[n_out++] = (char)p[k];
            }
        }
        tokens[i] = t;
        lens[i] = (uint32_t)n_out;
    }
    mf_vocab_init(v);
    snprintf(v->model, sizeof v->model, "llama");
    v->n_tokens = n;
    v->tokens = tokens;
    v->token_len = lens;
    v->scores = scores;
    if (n > 2) { /* llama2.c's run.c: 1 = BOS, 2 = EOS; SentencePiece's unknown is 0 */
        v->unk = 0;
        v->bos = 1;
        v->eos = 2;
    }
    v->add_bos = true;
    return TPORT_STATUS_OK;
}

tport_status tport_model_file_load_llama2c_vocab(tport_model_file *mf, const char *path) {
    if (!mf || !path)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "no model file or vocabulary path");
    if (mf->hp.n_vocab == 0 || mf->hp.n_vocab > INT32_MAX)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%s: the model's vocabulary size is unknown", mf->path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tport_error(TPORT_STATUS_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 4) {
        close(fd);
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset 0: not a llama2.c tokenizer file", path);
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return tport_error(TPORT_STATUS_IO, "%s: cannot map: %s", path, strerror(errno));
    mf_cursor c = {.data = map, .size = (uint64_t)st.st_size, .path = path};
    tport_status s = parse(mf, &c, (int32_t)mf->hp.n_vocab);
    if (s == TPORT_STATUS_OK && c.pos != c.size)
        tport_log(TPORT_LOG_WARN, "%s: %llu bytes after token %u ignored", path,
                  (unsigned long long)(c.size - c.pos), mf->hp.n_vocab);
    munmap(map, (size_t)st.st_size);
    return s;
}
