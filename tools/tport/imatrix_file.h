/* llama.cpp importance matrices, as llama-quantize reads them
 * (common/imatrix-loader.cpp, tools/quantize/quantize.cpp):
 *  - GGUF (llama-imatrix today): per weight W, the f32 tensors
 *    "W.in_sum2" (ne0 x n_expert sums of squared activations) and
 *    "W.counts" (n_expert counts); the weights are in_sum2 / count (1
 *    where a count is 0).  The keys imatrix.datasets, imatrix.chunk_count
 *    and imatrix.chunk_size must be present, as llama-quantize demands.
 *  - legacy .dat: i32 n_entries, then per entry {i32 len; name; i32 ncall;
 *    i32 nval; f32 values[nval]}, then optionally {i32 chunks; i32 len;
 *    dataset}: the weights are values / ncall (as they are if ncall <= 0).
 * Every length and count is bounds-checked; a file that is neither is
 * refused, naming why. */
#ifndef TPORT_TOOL_IMATRIX_FILE_H
#define TPORT_TOOL_IMATRIX_FILE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tport_imatrix tport_imatrix;

/* NULL on error (tport_last_error() says why). */
tport_imatrix *tport_imatrix_load(const char *path);
tport_imatrix *tport_imatrix_parse(const uint8_t *buf, size_t n, const char *what);
void tport_imatrix_free(tport_imatrix *im);
/* The weights for tensor `name` and their count, NULL if none. */
const float *tport_imatrix_find(const tport_imatrix *im, const char *name, int64_t *n);
int tport_imatrix_count(const tport_imatrix *im);
/* Its first dataset's name ("" if none) and chunk count (0 if not said),
 * which llama-quantize records in the file it writes. */
const char *tport_imatrix_dataset(const tport_imatrix *im);
uint32_t tport_imatrix_chunks(const tport_imatrix *im);

#endif
