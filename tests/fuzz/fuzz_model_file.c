/* libFuzzer target: any bytes through tport_model_file_open_memory (every
 * reader, chosen by sniffing).  A file that reads must describe tensors
 * that lie inside it; reading their bytes lets ASan check that too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/model_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* an exactly-sized copy, so a read one past the end is caught */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    tport_model_file *mf = NULL;
    if (tport_model_file_open_memory(copy, size, "fuzz-input", &mf) == TPORT_STATUS_OK) {
        volatile uint8_t sink = 0;
        for (int i = 0; i < mf->n_tensors; i++) {
            const tport_mf_tensor *t = &mf->tensors[i];
            if (t->nbytes)
                sink ^= ((const uint8_t *)t->data)[0] ^ ((const uint8_t *)t->data)[t->nbytes - 1];
            if (t->data == (const void *)(copy + t->offset) && t->offset + t->nbytes > size)
                abort();
        }
        for (int32_t i = 0; i < mf->vocab.n_tokens; i++)
            sink ^= (uint8_t)mf->vocab.tokens[i][mf->vocab.token_len[i]];
        (void)sink;
        tport_model_file_close(mf);
    }
    free(copy);
    return 0;
}
