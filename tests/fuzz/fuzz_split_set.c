/* libFuzzer target: models spread over several files.  The input is a set
 * of up to 4 files, written to a private folder and opened as one model:
 *   byte 0: bits 0-1 = files - 1, bits 2-3 = the file to open,
 *           bit 7 = sharded safetensors (else split GGUF);
 *   then per file a u32 little-endian length and that many bytes.
 * Split GGUF: the files are fz-0000K-of-0000N.gguf.  Safetensors: file 0
 * is model.safetensors.index.json, the others s1.safetensors ... (what the
 * index names); "the file to open" 0 opens the folder.  A model that
 * opens must describe tensors inside their files; reading their first and
 * last bytes lets ASan check that. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/model_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void file_name(char *out, size_t cap, bool st, unsigned k, unsigned n) {
    if (!st)
        snprintf(out, cap, "%s/fz-%05u-of-%05u.gguf", dir, k + 1, n);
    else if (k == 0)
        snprintf(out, cap, "%s/model.safetensors.index.json", dir);
    else
        snprintf(out, cap, "%s/s%u.safetensors", dir, k);
}

static void clean(void) {
    char path[128];
    for (unsigned n = 1; n <= 4; n++)
        for (unsigned k = 0; k < n; k++) {
            file_name(path, sizeof path, false, k, n);
            unlink(path);
            file_name(path, sizeof path, true, k, n);
            unlink(path);
        }
}

static void remove_dir(void) {
    clean();
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%.40s/tport-fuzz-split-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
            abort();
        atexit(remove_dir);
    }
    if (size < 1)
        return 0;
    unsigned n = (data[0] & 3u) + 1, open_k = (data[0] >> 2 & 3u) % n;
    bool st = data[0] & 0x80;
    size_t at = 1;
    clean();
    char path[128];
    for (unsigned k = 0; k < n; k++) {
        uint32_t len = 0;
        if (at + 4 <= size) {
            len = (uint32_t)data[at] | (uint32_t)data[at + 1] << 8 | (uint32_t)data[at + 2] << 16 |
                  (uint32_t)data[at + 3] << 24;
            at += 4;
        } else {
            at = size;
        }
        if (len > size - at)
            len = (uint32_t)(size - at);
        file_name(path, sizeof path, st, k, n);
        FILE *f = fopen(path, "wb");
        if (!f)
            abort();
        if (len && fwrite(data + at, 1, len, f) != len)
            abort();
        fclose(f);
        at += len;
    }
    if (st && open_k == 0)
        snprintf(path, sizeof path, "%s", dir);
    else
        file_name(path, sizeof path, st, open_k, n);
    tport_model_file *mf = NULL;
    if (tport_model_file_open(path, &mf) == TPORT_STATUS_OK) {
        volatile uint8_t sink = 0;
        for (int i = 0; i < mf->n_tensors; i++) {
            const tport_mf_tensor *t = &mf->tensors[i];
            if (t->nbytes)
                sink ^= ((const uint8_t *)t->data)[0] ^ ((const uint8_t *)t->data)[t->nbytes - 1];
            if (!tport_model_file_part_path(mf, t->part))
                abort();
        }
        (void)sink;
        tport_model_file_close(mf);
    }
    return 0;
}
