/* Type helpers: sizes from the host's type table, row conversions to and
 * from f32 for any stride. */
#include <string.h>

#include "cpu_internal.h"

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

/* f16 -> f32 for all 65,536 bit patterns, filled once from the host's
 * reference conversion: a table lookup is several times faster than
 * converting bits, and gives the same values by construction. */
static float f16_table[65536];
static uint16_t f16_patterns[65536];
static atomic_bool f16_ready;

void cpu_types_init(void) {
    if (atomic_load(&f16_ready))
        return;
    for (uint32_t i = 0; i < 65536; i++)
        f16_patterns[i] = (uint16_t)i;
    if (cpu_host->to_float(TPORT_TYPE_F16, f16_patterns, f16_table, 65536) == TPORT_STATUS_OK)
        atomic_store(&f16_ready, true);
}

float cpu_half_to_float(uint16_t h) {
    return f16_table[h];
}

static void f16_row(const uint8_t *row, size_t stride, int64_t n, float *out) {
    int64_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
    /* dense rows: 8 conversions per instruction (exact, like the table) */
    if (stride == sizeof(uint16_t))
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(row + 2 * i))));
#endif
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, row + (size_t)i * stride, sizeof h);
        out[i] = f16_table[h];
    }
}

/* bf16 is the top half of an f32 */
static void bf16_row(const uint8_t *row, size_t stride, int64_t n, float *out) {
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, row + (size_t)i * stride, sizeof h);
        uint32_t bits = (uint32_t)h << 16;
        memcpy(&out[i], &bits, sizeof bits);
    }
}

size_t cpu_type_size(tport_type_id type) {
    const tport_type_info *ti = cpu_host->type_info(type);
    return ti ? (size_t)ti->block_bytes : 0;
}

int64_t cpu_block_size(tport_type_id type) {
    const tport_type_info *ti = cpu_host->type_info(type);
    return ti && ti->block_size > 0 ? ti->block_size : 0;
}

/* A zero-length conversion tells whether the host has the function. */
bool cpu_can_to_float(tport_type_id type) {
    static _Alignas(64) uint8_t src[64];
    float dst[1];
    return cpu_block_size(type) > 0 && cpu_host->to_float(type, src, dst, 0) == TPORT_STATUS_OK;
}

bool cpu_can_from_float(tport_type_id type) {
    static const float src[1];
    uint8_t dst[64];
    return cpu_block_size(type) > 0 && cpu_host->from_float(type, src, dst, 0) == TPORT_STATUS_OK;
}

bool cpu_rows_dense(const tport_tensor_view *t) {
    return t->nb[0] == cpu_type_size(t->type);
}

bool cpu_row_to_f32(const tport_tensor_view *t, const uint8_t *row, int64_t n, float *out) {
    size_t es = cpu_type_size(t->type);
    if (t->type == TPORT_TYPE_F32) {
        if (t->nb[0] == sizeof(float))
            memcpy(out, row, (size_t)n * sizeof(float));
        else
            for (int64_t i = 0; i < n; i++)
                memcpy(&out[i], row + (size_t)i * t->nb[0], sizeof(float));
        return true;
    }
    if (t->type == TPORT_TYPE_F16 && atomic_load(&f16_ready)) {
        f16_row(row, t->nb[0], n, out);
        return true;
    }
    if (t->type == TPORT_TYPE_BF16) {
        bf16_row(row, t->nb[0], n, out);
        return true;
    }
    if (t->nb[0] == es)
        return cpu_host->to_float(t->type, row, out, n) == TPORT_STATUS_OK;
    if (cpu_block_size(t->type) != 1)
        return false; /* strided blocks are never produced */
    for (int64_t i = 0; i < n; i++)
        if (cpu_host->to_float(t->type, row + (size_t)i * t->nb[0], &out[i], 1) != TPORT_STATUS_OK)
            return false;
    return true;
}

bool cpu_f32_to_f16(const float *in, uint16_t *out, int64_t n) {
    int64_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
    /* 8 conversions per instruction, rounding to nearest even like the
     * host's reference (and ggml's GGML_CPU_FP32_TO_FP16) */
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(out + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    return i == n || cpu_host->from_float(TPORT_TYPE_F16, in + i, out + i, n - i) == TPORT_STATUS_OK;
}

bool cpu_row_from_f32(const tport_tensor_view *t, uint8_t *row, int64_t n, const float *in) {
    size_t es = cpu_type_size(t->type);
    if (t->type == TPORT_TYPE_F32) {
        if (t->nb[0] == sizeof(float))
            memcpy(row, in, (size_t)n * sizeof(float));
        else
            for (int64_t i = 0; i < n; i++)
                memcpy(row + (size_t)i * t->nb[0], &in[i], sizeof(float));
        return true;
    }
    if (t->type == TPORT_TYPE_F16 && t->nb[0] == sizeof(uint16_t))
        return cpu_f32_to_f16(in, (uint16_t *)(void *)row, n); /* the KV cache writes */
    if (t->nb[0] == es)
        return cpu_host->from_float(t->type, in, row, n) == TPORT_STATUS_OK;
    if (cpu_block_size(t->type) != 1)
        return false;
    for (int64_t i = 0; i < n; i++)
        if (cpu_host->from_float(t->type, &in[i], row + (size_t)i * t->nb[0], 1) != TPORT_STATUS_OK)
            return false;
    return true;
}

const float *cpu_row_f32(const tport_tensor_view *t, int64_t i1, int64_t i2, int64_t i3, float *buf) {
    const uint8_t *row = cpu_row(t, i1, i2, i3);
    if (t->type == TPORT_TYPE_F32 && t->nb[0] == sizeof(float))
        return (const float *)row;
    cpu_row_to_f32(t, row, t->ne[0], buf);
    return buf;
}

cpu_byte_range cpu_view_range(const tport_tensor_view *t) {
    int64_t bs = cpu_block_size(t->type);
    size_t size = cpu_type_size(t->type);
    if (!t->data || bs <= 0 || size == 0)
        return (cpu_byte_range){0, UINTPTR_MAX};
    uintptr_t lo = (uintptr_t)t->data, extent = size;
    for (int d = 0; d < TPORT_MAX_DIMS; d++) {
        int64_t n = d == 0 ? (t->ne[0] + bs - 1) / bs : t->ne[d];
        if (n <= 0)
            return (cpu_byte_range){lo, lo};
        extent += (uintptr_t)(n - 1) * (uintptr_t)t->nb[d];
    }
    return (cpu_byte_range){lo, lo + extent};
}

bool cpu_ranges_overlap(cpu_byte_range a, cpu_byte_range b) {
    return a.lo < b.hi && b.lo < a.hi;
}

bool cpu_views_overlap(const tport_tensor_view *a, const tport_tensor_view *b) {
    return cpu_ranges_overlap(cpu_view_range(a), cpu_view_range(b));
}

bool cpu_same_view(const tport_tensor_view *a, const tport_tensor_view *b) {
    if (a->data != b->data || a->type != b->type)
        return false;
    for (int d = 0; d < TPORT_MAX_DIMS; d++)
        if (a->ne[d] != b->ne[d] || a->nb[d] != b->nb[d])
            return false;
    return true;
}
