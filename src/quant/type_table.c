#include "type_table.h"

#include <string.h>

#include "core/fp16.h"

static void f32_to_float(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

static void f32_from_float(const float *src, void *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

static void f16_to_float(const void *src, float *dst, int64_t n) {
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = tport_fp16_to_fp32(s[i]);
}

static void f16_from_float(const float *src, void *dst, int64_t n) {
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i++)
        d[i] = tport_fp32_to_fp16(src[i]);
}

static void bf16_to_float(const void *src, float *dst, int64_t n) {
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = tport_bf16_to_fp32(s[i]);
}

static void bf16_from_float(const float *src, void *dst, int64_t n) {
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i++)
        d[i] = tport_fp32_to_bf16(src[i]);
}

static void i32_to_float(const void *src, float *dst, int64_t n) {
    const int32_t *s = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)s[i];
}

#define INFO(id_, name_, blk, bytes, quant, dot) \
    { sizeof(tport_type_info), (id_), (name_), (blk), (bytes), (quant), (dot) }

/* Sorted by id. */
static const tport_type_traits table[] = {
    {INFO(TPORT_TYPE_F32, "f32", 1, 4, false, TPORT_TYPE_F32), "f32", "current", 32.0,
     "ggml, 2022", f32_to_float, f32_from_float},
    {INFO(TPORT_TYPE_F16, "f16", 1, 2, false, TPORT_TYPE_F16), "f16", "current", 16.0,
     "ggml, 2022", f16_to_float, f16_from_float},
    {INFO(TPORT_TYPE_I32, "i32", 1, 4, false, TPORT_TYPE_I32), "i32", "current", 32.0,
     "ggml, 2023", i32_to_float, NULL},
    {INFO(TPORT_TYPE_BF16, "bf16", 1, 2, false, TPORT_TYPE_BF16), "bf16", "current", 16.0,
     "ggml, 2024 (llama.cpp #6412)", bf16_to_float, bf16_from_float},
};

const tport_type_traits *tport_traits(tport_type_id type) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].info.id == type)
            return &table[i];
    return NULL;
}

int tport_traits_count(void) {
    return (int)(sizeof table / sizeof table[0]);
}

const tport_type_traits *tport_traits_at(int i) {
    if (i < 0 || i >= tport_traits_count())
        return NULL;
    return &table[i];
}
