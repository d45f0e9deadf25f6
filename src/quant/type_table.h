/* The table of every tensor type tensorport knows: today's ggml types and
 * every historical layout revision.  One row per type id. */
#ifndef TPORT_QUANT_TYPE_TABLE_H
#define TPORT_QUANT_TYPE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "tport/backend.h"

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
} tport_type_traits;

/* NULL for an unknown id. */
const tport_type_traits *tport_traits(tport_type_id type);
/* Every known type, in id order: for i in [0, tport_traits_count()). */
int tport_traits_count(void);
const tport_type_traits *tport_traits_at(int i);

#endif
