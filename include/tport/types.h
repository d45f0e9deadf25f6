/* The table of every tensor type tensorport knows: today's ggml types and
 * every historical layout revision, one row per type id.  Read-only facts
 * for tools and programs that inspect or convert files (tport info,
 * convert, types); the quantizers themselves are tport_quantize and
 * tport_dequantize in tport.h. */
#ifndef TPORT_TYPES_H
#define TPORT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tport/backend.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef void (*tport_to_float_fn)(const void *src, float *dst, int64_t n);
typedef void (*tport_from_float_fn)(const float *src, void *dst, int64_t n);

typedef struct tport_type_traits {
    tport_type_info info;       /* what plug-ins see (name, block, bytes) */
    const char *family;         /* "q4_0" for every Q4_0 revision         */
    const char *revision;       /* "current", "qnt0", "qnt1"              */
    double bits_per_weight;
    const char *defined_in;     /* where and when the layout appeared     */
    tport_to_float_fn to_float;     /* reference dequantize               */
    tport_from_float_fn from_float; /* reference quantize, NULL if none   */
    /* The current type a tensor of this revision becomes in tport convert
     * (itself for a current type; the same family's current layout, or
     * the nearest current type for a removed family).  A row length that
     * is not whole blocks of it becomes f16. */
    tport_type_id successor;
    int file_type;        /* llama_ftype of a "mostly this type" file, or -1 */
    unsigned flags;       /* TPORT_TYPEF_*                                   */
} tport_type_traits;

enum {
    /* an operand type of in-memory dot products (Q8_1, Q8_K): never a
     * weight in a file, never a conversion target */
    TPORT_TYPEF_ACTIVATION = 1u << 0,
    /* integers (ids, positions, raw data): not a weight type */
    TPORT_TYPEF_INTEGER = 1u << 1,
    /* blocks of several rows interleaved (row_groups.h: the removed
     * Q4_0_4_4 .. IQ4_NL_4_4): a row is not whole on its own, so there is
     * no to_float; only whole tensors are re-encoded to the successor, at
     * load and by tport convert.  Weights in files, never in a graph. */
    TPORT_TYPEF_ROW_GROUPS = 1u << 2,
};

/* Whether model weights come in this type and backends compute with it
 * (every row that is neither an activation type, an integer nor
 * row-grouped): what conformance and conversion try. */
bool tport_type_is_weight(const tport_type_traits *t);
/* The row of the same family with that revision ("qk64": the layout
 * GGML_QKK_64 builds wrote a K-quant in), or NULL. */
const tport_type_traits *tport_type_revision(const tport_type_traits *t, const char *revision);

/* NULL for an unknown id. */
const tport_type_traits *tport_traits(tport_type_id type);
/* Every known type, in id order: for i in [0, tport_traits_count()). */
int tport_traits_count(void);
const tport_type_traits *tport_traits_at(int i);


#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* TPORT_TYPES_H */
