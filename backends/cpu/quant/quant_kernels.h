/* Internal to backends/cpu/quant: block layouts, small helpers and the
 * per-ISA kernel tables.  Includes nothing of tensorport but backend.h.
 *
 * Every global name goes through CPUQ() so a test can compile a second
 * copy of these sources with other compiler flags (-mavx2 ...) next to the
 * copy inside libtport, under another prefix. */
#ifndef TPORT_CPU_QUANT_KERNELS_H
#define TPORT_CPU_QUANT_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../cpu_quant.h"

#ifndef CPUQ_PREFIX
#define CPUQ_PREFIX cpuq_
#endif
#define CPUQ_CAT2(a, b) a##b
#define CPUQ_CAT(a, b) CPUQ_CAT2(a, b)
#define CPUQ(name) CPUQ_CAT(CPUQ_PREFIX, name)

#define QK_K 256

/* Block sizes in bytes. */
enum {
    BQ4_0 = 18, BQ4_1 = 20, BQ5_0 = 22, BQ5_1 = 24, BQ8_0 = 34, BQ8_1 = 36,
    BQ2_K = 84, BQ3_K = 110, BQ4_K = 144, BQ5_K = 176, BQ6_K = 210, BQ8_K = 292,
    BIQ4_NL = 18, BIQ4_XS = 136, BMXFP4 = 17,
    BQ4_0_F32 = 20, BQ4_1_F32 = 24, BQ4_2 = 10, BQ4_3 = 12, BQ8_0_F32 = 36,
};
/* Q8_K field offsets. */
enum { Q8K_QS = 4, Q8K_BSUMS = 260 };

#if defined(__F16C__)
#include <immintrin.h>
/* IEEE binary16 -> binary32 (exact): one vcvtph2ps. */
static inline float cpuq_half(const uint8_t *p) { return _cvtsh_ss((unsigned short)(p[0] | p[1] << 8)); }
#else
/* IEEE binary16 -> binary32 (exact), without F16C. */
static inline float cpuq_half(const uint8_t *p) {
    const uint32_t h = (uint32_t)p[0] | (uint32_t)p[1] << 8;
    const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | man << 13;
    } else if (exp != 0) {
        bits = sign | (exp + 112) << 23 | man << 13;
    } else if (man == 0) {
        bits = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        uint32_t m = man;
        do {
            e++;
            m <<= 1;
        } while (!(m & 0x400));
        bits = sign | (uint32_t)(112 - e) << 23 | (m & 0x3ff) << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}
#endif
static inline float cpuq_f32(const uint8_t *p) {
    float f;
    memcpy(&f, p, 4);
    return f;
}
static inline int16_t cpuq_i16(const uint8_t *p) { return (int16_t)(uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t cpuq_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Q4_K/Q5_K: the 8 6-bit scales and mins from their 12 packed bytes. */
static inline void cpuq_scale_min_k4(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]) {
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            sc[j] = s[j] & 63;
            mn[j] = s[j + 4] & 63;
        } else {
            sc[j] = (uint8_t)((s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4);
            mn[j] = (uint8_t)((s[j + 4] >> 4) | (s[j] >> 6) << 4);
        }
    }
}

/* Q3_K: the 16 signed 6-bit scales. */
static inline void cpuq_scales_q3k(const uint8_t *s, int8_t out[16]) {
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
        const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = (int8_t)((lo | hi << 4) - 32);
    }
}

/* Q8_K activations {f32 d; i8 qs[256]; i16 bsums[16]}: bsums[j] is the
 * sum of qs[16j..16j+15]. */
static inline int cpuq_q8k_bsum(const uint8_t *y, int j) { return cpuq_i16(y + Q8K_BSUMS + 2 * j); }

/* Q4_K/Q5_K: sum over the 8 groups of 32 of min * (sum of the group's
 * activations), i.e. what the mins take off, in integers. */
static inline int cpuq_k4_min_sum(const uint8_t mn[8], const uint8_t *y) {
    int msum = 0;
    for (int g = 0; g < 8; g++)
        msum += mn[g] * (cpuq_q8k_bsum(y, 2 * g) + cpuq_q8k_bsum(y, 2 * g + 1));
    return msum;
}

/* Q6_K: sum over the 16 groups of scale * (sum of the group's
 * activations); times 32 it is the -32 offset of every quant. */
static inline int cpuq_q6k_scaled_bsum(const int8_t sc[16], const uint8_t *y) {
    int off = 0;
    for (int g = 0; g < 16; g++)
        off += sc[g] * cpuq_q8k_bsum(y, g);
    return off;
}

/* IQ4_XS: group g's 6-bit scale (minus 32) from the low nibbles at x+4 and
 * the two high bits in scales_h (x[2] | x[3] << 8). */
static inline int cpuq_iq4xs_scale(const uint8_t *x, unsigned scales_h, int g) {
    return (((x[4 + g / 2] >> 4 * (g % 2)) & 0xf) | ((scales_h >> 2 * g) & 3) << 4) - 32;
}

/* MXFP4 {u8 e; u8 qs[16]}: the block scale 2^(e-128), half the E8M0 value
 * (ggml keeps the E2M1 codes doubled, as integers); e = 0 and 1 are the
 * subnormals 2^-128 and 2^-127. */
static inline float cpuq_e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? UINT32_C(0x00200000) << e : (uint32_t)(e - 1) << 23;
    float d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* NVFP4's UE4M3 sub-block scale, halved as ggml's ggml_ue4m3_to_fp32
 * (the E2M1 codes are doubled): (8 + m) 2^(e-11), or m 2^-10 for e = 0;
 * the sign bit is ignored and 0x7f (NaN) is 0.  Exact. */
static inline float cpuq_ue4m3_half(uint8_t x) {
    const int e = (x >> 3) & 15, m = x & 7;
    const uint32_t bits = (uint32_t)((e ? e : 1) + 116) << 23; /* 2^(max(e,1) - 11) */
    float p;
    memcpy(&p, &bits, sizeof p);
    return x == 0x7f ? 0.0f : (float)(e ? 8 + m : m) * p;
}

/* The kernels of NVFP4, Q1_0 and Q2_0 (dot_nvfp4.c, dot_q1_0.c,
 * dot_q2_0.c) keep eight float accumulators, unit u (a 16- or 32-element
 * piece with one weight and one activation scale) of step k going to lane
 * u: acc[u] += (d_x d_y) * isum, a multiply, a multiply and an add, the
 * same in the scalar and the SIMD kernels, so that they agree bit for
 * bit.  The lanes are then added in this order (an AVX2 horizontal sum's). */
static inline float cpuq_sum_lanes8(const float a[8]) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}
/* One unit into its lane, in the order above (separate statements: no
 * contraction into a fused multiply-add, which the SIMD kernels do not do). */
static inline void cpuq_lane_add(float *acc, float dx, float dy, int isum) {
    const float sc = dx * dy;
    const float t = sc * (float)isum;
    *acc += t;
}

extern const int8_t CPUQ(kvalues_iq4nl)[16];
/* ggml's kvalues_mxfp4: the 16 E2M1 codes, doubled. */
extern const int8_t CPUQ(kvalues_mxfp4)[16];

/* Kernel tables: which dot product serves which weight type. */
typedef struct cpuq_kernel_entry {
    tport_type_id type;
    cpu_vec_dot_fn fn;
} cpuq_kernel_entry;

static inline cpu_vec_dot_fn cpuq_lookup(const cpuq_kernel_entry *t, size_t n, tport_type_id type) {
    for (size_t i = 0; i < n; i++)
        if (t[i].type == type)
            return t[i].fn;
    return NULL;
}

/* A type whose file holds all its kernels: one row of vec_dot.c's table.
 * avx2 and avx512 are NULL in copies not compiled for the instruction set;
 * avx512_4, the four-row version of avx512 (cpu_vec_dot4_for), NULL where
 * there is none. */
typedef struct cpuq_type_kernels {
    tport_type_id type;
    cpu_vec_dot_fn scalar, avx2, avx512;
    cpu_vec_dot4_fn avx512_4;
} cpuq_type_kernels;
extern const cpuq_type_kernels CPUQ(nvfp4_kernels);
extern const cpuq_type_kernels CPUQ(q1_0_kernels);
extern const cpuq_type_kernels CPUQ(q2_0_kernels);

/* Defines the table function CPUQ(name) from {type, fn} entries. */
#define CPUQ_KERNEL_TABLE(name, ...)                                              \
    cpu_vec_dot_fn CPUQ(name)(tport_type_id type) {                               \
        static const cpuq_kernel_entry entries[] = {__VA_ARGS__};                 \
        return cpuq_lookup(entries, sizeof entries / sizeof entries[0], type);    \
    }
/* The table function of an instruction set this copy is not compiled for. */
#define CPUQ_NO_KERNELS(name)                                                     \
    cpu_vec_dot_fn CPUQ(name)(tport_type_id type) {                               \
        (void)type;                                                               \
        return NULL;                                                              \
    }

/* How far ahead, in bytes, the row kernels that stream a weight once per
 * token (dot_avx512.c's, the AVX2 Q5_0, Q5_1, Q4_K, Q5_K and Q6_K ones)
 * prefetch it: the machine's distance,
 * cpu_stream_ahead, copied here by cpu_prefetch_init (vec_dot.c holds a
 * value until then). */
extern uintptr_t CPUQ(stream_ahead);

/* Kernel tables: NULL where the ISA has no kernel of its own. */
cpu_vec_dot_fn CPUQ(scalar_legacy_kernel)(tport_type_id type);
cpu_vec_dot_fn CPUQ(scalar_kquant_kernel)(tport_type_id type);
cpu_vec_dot_fn CPUQ(scalar_iq_kernel)(tport_type_id type);
cpu_vec_dot_fn CPUQ(scalar_kernel)(tport_type_id type);
/* act_quant.c: activations as llama.cpp's x86 CPU backend quantizes them
 * (declared for callers in ../cpu_quant.h under the default prefix). */
bool CPUQ(quantize_act)(tport_type_id type, const float *x, void *y, int64_t n);
bool CPUQ(quantize_act_scalar)(tport_type_id type, const float *x, void *y, int64_t n);
cpu_vec_dot_fn CPUQ(avx2_legacy_kernel)(tport_type_id type);
cpu_vec_dot_fn CPUQ(avx2_kquant_kernel)(tport_type_id type);
cpu_vec_dot_fn CPUQ(avx2_iq_kernel)(tport_type_id type);
cpu_vec_dot_fn CPUQ(avx512_kernel)(tport_type_id type);
cpu_vec_dot_fn CPUQ(avx512_iq_kernel)(tport_type_id type);
cpu_vec_dot_fn CPUQ(avx512_lut_kernel)(tport_type_id type);
cpu_vec_dot4_fn CPUQ(avx512_lut_rows4)(tport_type_id type);
cpu_vec_dot_fn CPUQ(sse2_kernel)(tport_type_id type);
cpu_vec_dot_fn CPUQ(sse2_iq_kernel)(tport_type_id type);

#endif
