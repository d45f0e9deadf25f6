/* llama2.c's tokenizer.bin: i32 max_token_length, then per token f32 score,
 * i32 len, len bytes.  Its exporter replaced U+2581 by ' ' and stored BOS
 * and EOS as "\n<s>\n" / "\n</s>\n"; we turn the spaces back into U+2581 so
 * the same BPE code serves both vocabularies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenize/tokenizer_impl.h"

static int read_exact(FILE *f, void *dst, size_t n) {
    return fread(dst, 1, n, f) == n ? 0 : -1;
}

tport_status tport_tokenizer_load_llama2c(const char *path, int32_t n_vocab,
                                          tport_tokenizer **out) {
    *out = NULL;
    if (n_vocab <= 0)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%s: vocabulary size %d", path, (int)n_vocab);
    FILE *f = fopen(path, "rb");
    if (!f)
        return tport_error(TPORT_STATUS_IO, "%s: cannot open", path);
    tport_tokenizer *tk = tport_tokenizer_alloc(n_vocab);
    tport_status st = TPORT_STATUS_OK;
    char *raw = NULL;
    int32_t max_len = 0;
    if (!tk) {
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: %d tokens", path, (int)n_vocab);
        goto done;
    }
    if (read_exact(f, &max_len, 4) != 0 || max_len <= 0 || max_len > (1 << 20)) {
        st = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset 0: bad max_token_length", path);
        goto done;
    }
    raw = malloc((size_t)max_len + 1);
    if (!raw) {
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    for (int32_t i = 0; i < n_vocab; i++) {
        long off = ftell(f);
        float score;
        int32_t len;
        if (read_exact(f, &score, 4) != 0 || read_exact(f, &len, 4) != 0) {
            st = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset %ld: token %d of %d missing",
                             path, off, (int)i, (int)n_vocab);
            goto done;
        }
        if (len < 0 || len > max_len) {
            st = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset %ld: token %d length %d "
                             "outside [0, %d]", path, off, (int)i, (int)len, (int)max_len);
            goto done;
        }
        if (read_exact(f, raw, (size_t)len) != 0) {
            st = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset %ld: token %d truncated",
                             path, off + 8, (int)i);
            goto done;
        }
        tk->text[i] = tport_spm_escape(raw, (uint32_t)len, &tk->len[i]);
        if (!tk->text[i]) {
            st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
            goto done;
        }
        tk->score[i] = score;
        tk->type[i] = tport_byte_token_value(raw, (uint32_t)len) >= 0 ? TPORT_TOKEN_BYTE : TPORT_TOKEN_NORMAL;
    }
    /* SentencePiece's llama convention: 0 <unk>, 1 <s>, 2 </s>. */
    tk->unk = 0;
    tk->type[0] = TPORT_TOKEN_UNKNOWN;
    if (n_vocab > 2) {
        tk->bos = 1;
        tk->eos = 2;
        tk->type[1] = tk->type[2] = TPORT_TOKEN_CONTROL;
    }
    tport_tokenizer_attrs_from_types(tk);
    st = tport_tokenizer_index(tk);
    if (st == TPORT_STATUS_OK)
        st = tport_tokenizer_index_special(tk);
done:
    free(raw);
    fclose(f);
    if (st != TPORT_STATUS_OK) {
        tport_tokenizer_free(tk);
        return st;
    }
    *out = tk;
    return TPORT_STATUS_OK;
}
