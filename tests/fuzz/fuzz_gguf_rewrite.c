/* libFuzzer target: whatever GGUF the reader accepts, the writer must be
 * able to write again, and reading that back must give the same metadata
 * count and the same tensor bytes.  A file holding a tensor of a type id
 * this build does not know is read to be shown only (convert refuses it),
 * so it is not written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf_write.h"
#include "formats/model_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tport_model_file *mf = NULL;
    if (size < 4 || memcmp(data, "GGUF", 4) ||
        tport_model_file_open_memory(data, size, "fuzz-input", &mf) != TPORT_STATUS_OK)
        return 0;
    if (tport_model_file_unknown_tensor(mf)) {
        tport_model_file_close(mf);
        return 0;
    }
    static char path[256];
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/tport-fuzz-rewrite-%d.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    }
    tport_gguf_writer *w = tport_gguf_writer_new();
    int n_kv = 0;
    for (int i = 0; i < mf->n_kv; i++) {
        if (!strcmp(mf->kv[i].key, "general.alignment"))
            continue;
        if (tport_gguf_set_kv(w, mf->kv[i].key, &mf->kv[i]) != TPORT_STATUS_OK)
            abort();
        n_kv++;
    }
    if (tport_gguf_set_alignment(w, mf->alignment) != TPORT_STATUS_OK)
        abort();
    if (mf->alignment != 32)
        n_kv++;
    for (int i = 0; i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        if (tport_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes) != TPORT_STATUS_OK)
            abort();
    }
    if (tport_gguf_write(w, path) != TPORT_STATUS_OK)
        abort();
    tport_gguf_writer_free(w);
    tport_model_file *back = NULL;
    if (tport_model_file_open(path, &back) != TPORT_STATUS_OK || back->n_kv != n_kv ||
        back->n_tensors != mf->n_tensors)
        abort();
    for (int i = 0; i < mf->n_tensors; i++) {
        const tport_mf_tensor *a = &mf->tensors[i], *b = tport_model_file_find(back, a->name);
        if (!b || b->type != a->type || b->nbytes != a->nbytes || memcmp(a->data, b->data, (size_t)a->nbytes))
            abort();
    }
    tport_model_file_close(back);
    tport_model_file_close(mf);
    unlink(path);
    return 0;
}
