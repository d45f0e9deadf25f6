/* tport convert, for the ggml examples' GGML-container files of an
 * architecture this build runs: GGUF tensor names from the architecture's
 * table (tport_model_file_gguf_name), gpt-neox's per-head interleaved query_key_value
 * rows re-ordered to GGUF's [Q|K|V], and a vocabulary (with merges, which
 * llama.cpp's BPE requires and these files lack) from a GGUF file. */
#include <stdlib.h>
#include <string.h>

#include "convert_arch.h"

tport_status convert_arch_deinterleave(void *data, uint64_t nbytes, int64_t n_rows, int64_t heads, int64_t hd) {
    if (n_rows != 3 * heads * hd || n_rows <= 0 || nbytes % (uint64_t)n_rows)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "convert: %lld rows are not 3 x %lld heads x %lld", (long long)n_rows,
                           (long long)heads, (long long)hd);
    size_t row = (size_t)(nbytes / (uint64_t)n_rows);
    uint8_t *copy = malloc((size_t)nbytes);
    if (!copy)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "convert: out of memory");
    memcpy(copy, data, (size_t)nbytes);
    tport_qkv_deinterleave(data, copy, (size_t)heads, (size_t)hd, row);
    free(copy);
    return TPORT_STATUS_OK;
}

tport_status convert_vocab_from(tport_gguf_writer *w, const char *path, int32_t n_tokens) {
    tport_model_file *v = NULL;
    tport_status s = tport_model_file_open(path, &v);
    if (s != TPORT_STATUS_OK)
        return s;
    if (v->container != TPORT_CONTAINER_GGUF || v->vocab.n_tokens != n_tokens)
        s = tport_error(TPORT_STATUS_BAD_FORMAT, "convert: %s has %d tokens in a %s file; the model has %d", path,
                        (int)v->vocab.n_tokens, tport_container_name(v->container), (int)n_tokens);
    for (int i = 0; !s && i < v->n_kv; i++)
        if (!strncmp(v->kv[i].key, "tokenizer.", 10))
            s = tport_gguf_set_kv(w, v->kv[i].key, &v->kv[i]);
    tport_model_file_close(v);
    return s;
}
