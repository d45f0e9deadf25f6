/* GGUF v3 writer.  Collect metadata and tensors in a writer object, then
 * write the file in one go:
 *
 *     tport_gguf_writer *w = tport_gguf_writer_new();
 *     tport_gguf_set_str(w, "general.architecture", "llama");
 *     tport_gguf_set_u32(w, "llama.block_count", 2);
 *     tport_gguf_add_tensor(w, "token_embd.weight", TPORT_TYPE_F16, 2, ne, data, nbytes);
 *     tport_status s = tport_gguf_write(w, "out.gguf");
 *     tport_gguf_writer_free(w);
 *
 * Keys are kept in insertion order; setting an existing key replaces its
 * value in place.  Values are copied; tensor data is borrowed until
 * tport_gguf_write returns (or produced on demand by a fill callback).
 * The file is written to a temporary name in the same folder and renamed
 * at the end; on error the temporary file is removed. */
#ifndef TPORT_GGUF_H
#define TPORT_GGUF_H

#include <stdbool.h>
#include <stdint.h>

#include "tport/model_file.h" /* tport_kv, for copying keys from a file */

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef struct tport_gguf_writer tport_gguf_writer;

tport_gguf_writer *tport_gguf_writer_new(void);
void tport_gguf_writer_free(tport_gguf_writer *w);

/* Tensor data alignment (a power of two, default 32); a value other than 32
 * is also recorded as general.alignment. */
tport_status tport_gguf_set_alignment(tport_gguf_writer *w, uint32_t alignment);

/* Adds or replaces a key with a deep copy of kv's value (kv->key ignored). */
tport_status tport_gguf_set_kv(tport_gguf_writer *w, const char *key, const tport_kv *kv);
tport_status tport_gguf_set_u32(tport_gguf_writer *w, const char *key, uint32_t v);
tport_status tport_gguf_set_i32(tport_gguf_writer *w, const char *key, int32_t v);
tport_status tport_gguf_set_u64(tport_gguf_writer *w, const char *key, uint64_t v);
tport_status tport_gguf_set_f32(tport_gguf_writer *w, const char *key, float v);
tport_status tport_gguf_set_bool(tport_gguf_writer *w, const char *key, bool v);
tport_status tport_gguf_set_str(tport_gguf_writer *w, const char *key, const char *v);
/* n values of a scalar type (stored as in tport_kv: uint8_t, int32_t, float,
 * bool, ... ; strings as const char *const *). */
tport_status tport_gguf_set_array(tport_gguf_writer *w, const char *key, tport_kv_type elem_type,
                                  const void *values, uint64_t n);
/* Removes a key if present. */
void tport_gguf_remove_kv(tport_gguf_writer *w, const char *key);
int tport_gguf_n_kv(const tport_gguf_writer *w);

/* A tensor with data in memory (borrowed until tport_gguf_write returns).
 * nbytes must match type and shape.  Current (GGUF) type ids only. */
tport_status tport_gguf_add_tensor(tport_gguf_writer *w, const char *name, tport_type_id type, int n_dims,
                                   const int64_t *ne, const void *data, uint64_t nbytes);

/* A tensor whose bytes are produced while writing: fill(user, i, dst,
 * nbytes) writes the nbytes of tensor i (its index in add order) to dst. */
typedef tport_status (*tport_gguf_fill_fn)(void *user, int tensor, void *dst, uint64_t nbytes);
tport_status tport_gguf_add_tensor_fill(tport_gguf_writer *w, const char *name, tport_type_id type, int n_dims,
                                        const int64_t *ne, tport_gguf_fill_fn fill, void *user);

/* Called after each tensor is written: done of total tensor bytes. */
typedef void (*tport_gguf_progress_fn)(void *user, uint64_t done, uint64_t total);
void tport_gguf_set_progress(tport_gguf_writer *w, tport_gguf_progress_fn fn, void *user);

tport_status tport_gguf_write(tport_gguf_writer *w, const char *path);

int tport_gguf_n_tensors(const tport_gguf_writer *w);
/* Bytes of tensor i (add order), 0 if there is none. */
uint64_t tport_gguf_tensor_nbytes(const tport_gguf_writer *w, int i);

/* ---- split GGUF, as llama.cpp's gguf-split writes it ---------------------- */
/* One file of a split: tensors [first, first + count) in add order.  The
 * first part (split_no 0) carries every key set on the writer; each part
 * ends its keys with split.no (u16), split.tensors.count (i32) and
 * split.count (u16), byte for byte as gguf-split's files.  Parts after the
 * first use GGUF's default alignment (32), as they carry no
 * general.alignment. */
typedef struct tport_gguf_part {
    int first, count;
    uint16_t split_no, split_count;
    int32_t tensors_total;
} tport_gguf_part;
/* Writes one part; progress reports done + this part's bytes of total. */
tport_status tport_gguf_write_part(tport_gguf_writer *w, const char *path, const tport_gguf_part *part,
                                   uint64_t done, uint64_t total);

/* Limits of one part (0 = none): tensor data bytes (each tensor counted
 * padded to 32, as gguf-split counts) and tensors. */
typedef struct tport_gguf_split_limits {
    uint64_t max_bytes;
    uint32_t max_tensors;
} tport_gguf_split_limits;
/* Writes PREFIX-00001-of-0000N.gguf ... (names as llama_split_path makes
 * them); the tensors go to the parts in add order, a new part starting
 * where the next tensor would pass a limit (a tensor larger than
 * max_bytes gets a part of its own).  On error no part is left behind.
 * *n_parts (may be NULL) gets N. */
tport_status tport_gguf_write_split(tport_gguf_writer *w, const char *prefix, const tport_gguf_split_limits *lim,
                                    uint32_t *n_parts);
/* The path of part k (0-based) of n: PREFIX-%05d-of-%05d.gguf.  malloc'ed. */
char *tport_gguf_split_path(const char *prefix, uint32_t k, uint32_t n);


#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* TPORT_GGUF_H */
