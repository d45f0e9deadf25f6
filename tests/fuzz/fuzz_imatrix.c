/* libFuzzer target: any bytes as an importance-matrix file (the GGUF form
 * or a legacy .dat; tools/tport/imatrix_file.c, read by `tport convert
 * --imatrix`).  Parsing must succeed or fail cleanly; what it returns
 * must be readable to its last weight. */
#include <stddef.h>
#include <stdint.h>

#include "imatrix_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* imatrix_file.c reads files through the tool's helper; the target only
 * parses memory. */
void *tool_read_all(const char *path, size_t max_bytes, size_t *size);
void *tool_read_all(const char *path, size_t max_bytes, size_t *size) {
    (void)path, (void)max_bytes, (void)size;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tport_imatrix *im = tport_imatrix_parse(data, size, "fuzz");
    int64_t n = 0;
    const float *w = tport_imatrix_find(im, "abc", &n);
    float sum = 0; /* touches every weight: ASan checks the count */
    for (int64_t i = 0; w && i < n; i++)
        sum += w[i];
    tport_imatrix_free(im);
    return sum != sum && tport_imatrix_count(NULL); /* NaN never comes back */
}
