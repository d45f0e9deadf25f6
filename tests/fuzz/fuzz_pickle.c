/* libFuzzer target: any bytes through the restricted unpickler (the
 * PyTorch readers' pickle machine).  It must refuse or accept without a
 * crash, a leak or unbounded memory; an accepted state dict's tensors are
 * walked so their fields are read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pytorch_pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1); /* exactly sized: ASan sees a read past the end */
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    pk_arena *arena = NULL;
    pk_obj *root;
    size_t used;
    char err[256];
    if (pk_unpickle(copy, size, &arena, &root, &used, err, sizeof err) && root->kind == PK_DICT) {
        volatile int64_t sink = 0;
        for (size_t i = 0; i < root->n; i++) {
            const pk_obj *v = root->values[i];
            if (v->kind == PK_TENSOR) {
                sink += v->offset + v->storage->numel + (int64_t)strlen(v->storage->key);
                for (int d = 0; d < v->n_dims; d++)
                    sink += v->size[d] + v->stride[d];
            }
        }
        (void)sink;
    }
    pk_arena_free(arena);
    free(copy);
    return 0;
}
