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

#include "tport/tport.h"

/* The names of the GGUF form, which tport imatrix writes too. */
#define TPORT_IMATRIX_SUMS_SUFFIX ".in_sum2"
#define TPORT_IMATRIX_COUNTS_SUFFIX ".counts"
#define TPORT_IMATRIX_KEY_DATASETS "imatrix.datasets"
#define TPORT_IMATRIX_KEY_CHUNK_COUNT "imatrix.chunk_count"
#define TPORT_IMATRIX_KEY_CHUNK_SIZE "imatrix.chunk_size"
#define TPORT_IMATRIX_GENERAL_TYPE "imatrix" /* general.type */

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

/* ---- writing (imatrix_write.c) --------------------------------------------- */
/* One weight's collected data, as llama-imatrix keeps it: n_mat rows of
 * n_cols sums of squared activations, and n_counts counts (1 for a plain
 * weight, whose matrices all saw the same rows; n_mat for an expert stack). */
typedef struct tport_imatrix_entry {
    char *name;
    int64_t n_cols;
    int32_t n_mat, n_counts;
    float *sums;
    int64_t *counts;
} tport_imatrix_entry;
/* What the whole file says besides the entries: the text's path (as given),
 * the chunks the data came from and the tokens of one chunk. */
typedef struct tport_imatrix_about {
    const char *dataset;
    int32_t chunk_count, chunk_size;
} tport_imatrix_about;
/* The GGUF form (general.type, imatrix.datasets, .chunk_count, .chunk_size,
 * then per entry in name order W.in_sum2 [n_cols, n_mat] and W.counts
 * [1, n_counts], f32), as llama-imatrix writes it by default. */
tport_status tport_imatrix_write_gguf(const char *path, const tport_imatrix_entry *e, int n,
                                      const tport_imatrix_about *about);
/* The legacy .dat form (llama-imatrix --output-format dat): per entry in
 * name order (none whose counts are all 0) the means scaled by ncall, the
 * chunks its largest count covers, rounded up; then the chunk count and
 * the dataset. */
tport_status tport_imatrix_write_dat(const char *path, const tport_imatrix_entry *e, int n,
                                     const tport_imatrix_about *about);

#endif
