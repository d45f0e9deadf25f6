#include "type_table.h"

#include <string.h>

#include "core/fp16.h"
#include "quant_rows.h"

static void f32_to_float(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

static void f32_from_float(const float *src, void *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

/* Rows of 16-bit floats (f16, bf16) and i32, read and written byte-wise:
 * a row may sit at any offset of a memory map. */
static void u16_row_to_float(const void *src, float *dst, int64_t n, float (*cvt)(uint16_t)) {
    const uint8_t *s = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, s + 2 * i, 2);
        dst[i] = cvt(h);
    }
}

static void u16_row_from_float(const float *src, void *dst, int64_t n, uint16_t (*cvt)(float)) {
    uint8_t *d = dst;
    for (int64_t i = 0; i < n; i++) {
        const uint16_t h = cvt(src[i]);
        memcpy(d + 2 * i, &h, 2);
    }
}

static void f16_to_float(const void *src, float *dst, int64_t n) { u16_row_to_float(src, dst, n, tport_fp16_to_fp32); }
static void f16_from_float(const float *src, void *dst, int64_t n) {
    u16_row_from_float(src, dst, n, tport_fp32_to_fp16);
}
static void bf16_to_float(const void *src, float *dst, int64_t n) { u16_row_to_float(src, dst, n, tport_bf16_to_fp32); }
static void bf16_from_float(const float *src, void *dst, int64_t n) {
    u16_row_from_float(src, dst, n, tport_fp32_to_bf16);
}

static void i32_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *s = src;
    for (int64_t i = 0; i < n; i++) {
        int32_t v;
        memcpy(&v, s + 4 * i, 4);
        dst[i] = (float)v;
    }
}

static void i8_to_float(const void *src, float *dst, int64_t n) {
    const int8_t *s = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)s[i];
}

static void i16_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *s = src;
    for (int64_t i = 0; i < n; i++) {
        int16_t v;
        memcpy(&v, s + 2 * i, 2);
        dst[i] = (float)v;
    }
}

static void i64_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *s = src;
    for (int64_t i = 0; i < n; i++) {
        int64_t v;
        memcpy(&v, s + 8 * i, 8);
        dst[i] = (float)v;
    }
}

/* f64 -> f32 rounds to nearest, as a C conversion does (ggml has no
 * to_float for f64; this is what its ggml_cpy does). */
static void f64_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *s = src;
    for (int64_t i = 0; i < n; i++) {
        double v;
        memcpy(&v, s + 8 * i, 8);
        dst[i] = (float)v;
    }
}

#define INFO(id_, name_, blk, bytes, quant, dot) \
    { sizeof(tport_type_info), (id_), (name_), (blk), (bytes), (quant), (dot) }
#define BPW(blk, bytes) ((double)(bytes) * 8.0 / (double)(blk))
/* A quantized row: name, family, revision, block, bytes, vec_dot type,
 * where defined, and the tport_dequant_/tport_quant_ pair of `fn`. */
#define QROW(ID, name, family, rev, blk, bytes, dot, where, fn, succ, ftype, flags)            \
    {INFO(TPORT_TYPE_##ID, name, blk, bytes, true, TPORT_TYPE_##dot), family, rev, BPW(blk, bytes), \
     where, tport_dequant_##fn, tport_quant_##fn, TPORT_TYPE_##succ, ftype, flags}
/* A current quantized type: its own successor. */
#define CROW(ID, name, blk, bytes, dot, where, fn, ftype, flags) \
    QROW(ID, name, name, "current", blk, bytes, dot, where, fn, ID, ftype, flags)

#define KQUANTS_AT "llama.cpp@99009e7 (#1684), 2023-06-05"
/* A current type read but not yet written (no reference quantizer here):
 * dequantize only; dot is the activation type of its products. */
#define DROW(ID, name, blk, bytes, dot, where, fn, ftype)                                                  \
    {INFO(TPORT_TYPE_##ID, name, blk, bytes, true, TPORT_TYPE_##dot), name, "current", BPW(blk, bytes), where, \
     tport_dequant_##fn, NULL, TPORT_TYPE_##ID, ftype, 0}
#define IQ_AT "(PR number from memory, unchecked)"
#define NLC_AT "in the ggml of node-llama-cpp 3.21.1's llama.cpp (first commit unchecked)"

/* GGML_QKK_64 k-quants: read-only (no quantizer); dotted in f32. */
#define QK64ROW(ID, name, family, bytes, fn, succ)                                                        \
    {INFO(TPORT_TYPE_##ID, name, 64, bytes, true, TPORT_TYPE_F32), family, "qk64", BPW(64, bytes),      \
     "llama.cpp@6769e94 (#2001), 2023-06-26, GGML_QKK_64 builds only; removed ggml@d29a4c0e, 2024-05-23", \
     tport_dequant_##fn, NULL, TPORT_TYPE_##succ, -1, 0}

/* Removed ggml types of interleaved row groups (row_groups.h): ggml's
 * blck_size 32 and type_size 18 (those of block_q4_0 / block_iq4_nl); no
 * row decodes alone, so neither to_float nor from_float. */
#define AARCH64_AT "llama.cpp #5780 (ggml@3f5a4bbe), 2024-07-10"
#define REPACK_GONE "removed by llama.cpp #10446 (ggml@b3a469a1), 2024-12-07, for runtime repacking"
#define GROW(ID, name, family, rev, where, succ)                                                  \
    {INFO(TPORT_TYPE_##ID, name, 32, 18, true, TPORT_TYPE_Q8_0), family, rev, BPW(32, 18), where, \
     NULL, NULL, TPORT_TYPE_##succ, -1, TPORT_TYPEF_ROW_GROUPS}

/* Sorted by id. */
static const tport_type_traits table[] = {
    {INFO(TPORT_TYPE_F32, "f32", 1, 4, false, TPORT_TYPE_F32), "f32", "current", 32.0,
     "ggml, 2022", f32_to_float, f32_from_float, TPORT_TYPE_F32, 0, 0},
    {INFO(TPORT_TYPE_F16, "f16", 1, 2, false, TPORT_TYPE_F16), "f16", "current", 16.0,
     "ggml, 2022", f16_to_float, f16_from_float, TPORT_TYPE_F16, 1, 0},
    CROW(Q4_0, "q4_0", 32, 18, Q8_0, "llama.cpp@2d5db48 (#1508) / ggml@b0d536bb, 2023-05-19 (QNT2: f16 scale)",
         q4_0, 2, 0),
    CROW(Q4_1, "q4_1", 32, 20, Q8_1, "llama.cpp@2d5db48 (#1508) / ggml@b0d536bb, 2023-05-19 (QNT2: f16 scales)",
         q4_1, 3, 0),
    CROW(Q5_0, "q5_0", 32, 22, Q8_0,
         "llama.cpp@b9fd7ee (#1405), 2023-05-12 (QNT1 split nibbles; struct from #1187, 04-26)", q5_0, 8, 0),
    CROW(Q5_1, "q5_1", 32, 24, Q8_1,
         "llama.cpp@b9fd7ee (#1405), 2023-05-12 (QNT1 split nibbles; struct from #1187, 04-26)", q5_1, 9, 0),
    CROW(Q8_0, "q8_0", 32, 34, Q8_0, "llama.cpp@2d5db48 (#1508) / ggml@b0d536bb, 2023-05-19 (QNT2: f16 scale)",
         q8_0, 7, 0),
    CROW(Q8_1, "q8_1", 32, 36, Q8_1, "ggml, {f16 d; f16 s} layout (in-memory activation type, never in files)",
         q8_1, -1, TPORT_TYPEF_ACTIVATION),
    CROW(Q2_K, "q2_K", 256, 84, Q8_K, KQUANTS_AT, q2_K, 10, 0),
    CROW(Q3_K, "q3_K", 256, 110, Q8_K, KQUANTS_AT, q3_K, 12, 0),
    CROW(Q4_K, "q4_K", 256, 144, Q8_K, KQUANTS_AT, q4_K, 15, 0),
    CROW(Q5_K, "q5_K", 256, 176, Q8_K, KQUANTS_AT, q5_K, 17, 0),
    CROW(Q6_K, "q6_K", 256, 210, Q8_K, KQUANTS_AT, q6_K, 18, 0),
    CROW(Q8_K, "q8_K", 256, 292, Q8_K, KQUANTS_AT " (in-memory only)", q8_K, -1, TPORT_TYPEF_ACTIVATION),
    DROW(IQ2_XXS, "iq2_xxs", 256, 66, Q8_K, "llama.cpp #4773, 2024-01 " IQ_AT, iq2_xxs, 19),
    DROW(IQ2_XS, "iq2_xs", 256, 74, Q8_K, "llama.cpp #4856, 2024-01 " IQ_AT, iq2_xs, 20),
    CROW(IQ3_XXS, "iq3_xxs", 256, 98, Q8_K, "llama.cpp #5196, 2024-01-30 " IQ_AT, iq3_xxs, 23, 0),
    DROW(IQ1_S, "iq1_s", 256, 50, Q8_K, "llama.cpp #5453, 2024-02 " IQ_AT, iq1_s, 24),
    CROW(IQ4_NL, "iq4_nl", 32, 18, Q8_0, "llama.cpp #5590 (opened 2024-02-19)", iq4_nl, 25, 0),
    CROW(IQ3_S, "iq3_s", 256, 110, Q8_K, "llama.cpp #5647, 2024-02 " IQ_AT, iq3_s, 26, 0),
    CROW(IQ2_S, "iq2_s", 256, 82, Q8_K, "llama.cpp #5693, 2024-02 " IQ_AT, iq2_s, 28, 0),
    CROW(IQ4_XS, "iq4_xs", 256, 136, Q8_K, "llama.cpp #5747, 2024-02 (PR number from memory, unchecked)", iq4_xs,
         30, 0),
    {INFO(TPORT_TYPE_I8, "i8", 1, 1, false, TPORT_TYPE_I8), "i8", "current", 8.0,
     "ggml, 2023", i8_to_float, NULL, TPORT_TYPE_I8, -1, TPORT_TYPEF_INTEGER},
    {INFO(TPORT_TYPE_I16, "i16", 1, 2, false, TPORT_TYPE_I16), "i16", "current", 16.0,
     "ggml, 2023", i16_to_float, NULL, TPORT_TYPE_I16, -1, TPORT_TYPEF_INTEGER},
    {INFO(TPORT_TYPE_I32, "i32", 1, 4, false, TPORT_TYPE_I32), "i32", "current", 32.0,
     "ggml, 2023", i32_to_float, NULL, TPORT_TYPE_I32, -1, TPORT_TYPEF_INTEGER},
    {INFO(TPORT_TYPE_I64, "i64", 1, 8, false, TPORT_TYPE_I64), "i64", "current", 64.0,
     "ggml, 2024 (date unchecked)", i64_to_float, NULL, TPORT_TYPE_I64, -1, TPORT_TYPEF_INTEGER},
    /* read (rounded to f32), never written: no from_float */
    {INFO(TPORT_TYPE_F64, "f64", 1, 8, false, TPORT_TYPE_F64), "f64", "current", 64.0,
     "ggml, 2024 (date unchecked)", f64_to_float, NULL, TPORT_TYPE_F64, -1, 0},
    CROW(IQ1_M, "iq1_m", 256, 56, Q8_K, "llama.cpp #6302, 2024-03 " IQ_AT, iq1_m, 31, 0),
    {INFO(TPORT_TYPE_BF16, "bf16", 1, 2, false, TPORT_TYPE_BF16), "bf16", "current", 16.0,
     "ggml, 2024 (llama.cpp #6412)", bf16_to_float, bf16_from_float, TPORT_TYPE_BF16, 32, 0},
    GROW(Q4_0_4_4, "q4_0_4x4", "q4_0", "4x4", AARCH64_AT " (4 rows, 4-byte chunks); " REPACK_GONE, Q4_0),
    GROW(Q4_0_4_8, "q4_0_4x8", "q4_0", "4x8", AARCH64_AT " (4 rows, 8-byte chunks); " REPACK_GONE, Q4_0),
    GROW(Q4_0_8_8, "q4_0_8x8", "q4_0", "8x8", AARCH64_AT " (8 rows, 8-byte chunks); " REPACK_GONE, Q4_0),
    CROW(TQ1_0, "tq1_0", 256, 54, Q8_K, "llama.cpp #8151, 2024-09 " IQ_AT, tq1_0, 36, 0),
    CROW(TQ2_0, "tq2_0", 256, 66, Q8_K, "llama.cpp #8151, 2024-09 " IQ_AT, tq2_0, 37, 0),
    GROW(IQ4_NL_4_4, "iq4_nl_4x4", "iq4_nl", "4x4",
         "llama.cpp #10541 (ggml@bb693904), 2024-11-28, a runtime repack target (4 rows, 4-byte chunks); "
         REPACK_GONE, IQ4_NL),
    /* file type 38 is LLAMA_FTYPE_MOSTLY_MXFP4_MOE (llama.h) */
    CROW(MXFP4, "mxfp4", 32, 17, Q8_0, "llama.cpp@fd1234c (#15091, gpt-oss), 2025-08-05", mxfp4, 38, 0),
    CROW(NVFP4, "nvfp4", 64, 36, Q8_0, NLC_AT, nvfp4, 39, 0),
    CROW(Q1_0, "q1_0", 128, 18, Q8_0, NLC_AT, q1_0, 40, 0),
    CROW(Q2_0, "q2_0", 64, 18, Q8_0, NLC_AT, q2_0, 41, 0),
    QROW(Q4_0_QNT0, "q4_0_qnt0", "q4_0", "qnt0", 32, 20, Q8_0,
         "llama.cpp@007a8f6, 2023-03-11 (interleaved nibbles, f32 scale)", q4_0_qnt0, Q4_0, -1, 0),
    QROW(Q4_1_QNT0, "q4_1_qnt0", "q4_1", "qnt0", 32, 24, Q8_1,
         "llama.cpp@904d2a8 (#193), 2023-03-17 (interleaved nibbles, f32 scales)", q4_1_qnt0, Q4_1, -1, 0),
    /* q4_2 and q4_3 have no current layout: q8_0 holds their values */
    QROW(Q4_2_QNT0, "q4_2_qnt0", "q4_2", "qnt0", 16, 10, Q8_0,
         "llama.cpp@77a7340 (#1046), 2023-04-18; removed by #1405, 2023-05-12", q4_2_qnt0, Q8_0, -1, 0),
    QROW(Q4_3_QNT0, "q4_3_qnt0", "q4_3", "qnt0", 16, 12, Q8_1,
         "llama.cpp@e0305ea (#1082), 2023-04-20; removed by #1218, 2023-04-28", q4_3_qnt0, Q8_0, -1, 0),
    QROW(Q5_0_QNT0, "q5_0_qnt0", "q5_0", "qnt0", 32, 22, Q8_0,
         "llama.cpp@574406d (#1187), 2023-04-26 (interleaved nibbles)", q5_0_qnt0, Q5_0, -1, 0),
    QROW(Q5_1_QNT0, "q5_1_qnt0", "q5_1", "qnt0", 32, 24, Q8_1,
         "llama.cpp@574406d (#1187), 2023-04-26 (interleaved nibbles)", q5_1_qnt0, Q5_1, -1, 0),
    QROW(Q8_0_QNT1, "q8_0_qnt1", "q8_0", "qnt1", 32, 36, Q8_0,
         "llama.cpp@7a32fcb (#1179), 2023-04-25 (f32 scale; same bytes in QNT0 and QNT1)", q8_0_qnt1, Q8_0, -1, 0),
    QROW(Q4_0_QNT1, "q4_0_qnt1", "q4_0", "qnt1", 32, 20, Q8_0,
         "llama.cpp@b9fd7ee (#1405), 2023-05-12 (split nibbles, f32 scale)", q4_0_qnt1, Q4_0, -1, 0),
    QROW(Q4_1_QNT1, "q4_1_qnt1", "q4_1", "qnt1", 32, 24, Q8_1,
         "llama.cpp@b9fd7ee (#1405), 2023-05-12 (split nibbles, f32 scales)", q4_1_qnt1, Q4_1, -1, 0),
    QK64ROW(Q2_K_QK64, "q2_K_qk64", "q2_K", 24, q2_K_qk64, Q2_K),
    QK64ROW(Q3_K_QK64, "q3_K_qk64", "q3_K", 28, q3_K_qk64, Q3_K),
    QK64ROW(Q4_K_QK64, "q4_K_qk64", "q4_K", 38, q4_K_qk64, Q4_K),
    QK64ROW(Q5_K_QK64, "q5_K_qk64", "q5_K", 46, q5_K_qk64, Q5_K),
    QK64ROW(Q6_K_QK64, "q6_K_qk64", "q6_K", 54, q6_K_qk64, Q6_K),
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

bool tport_type_is_weight(const tport_type_traits *t) {
    return t && !(t->flags & (TPORT_TYPEF_ACTIVATION | TPORT_TYPEF_INTEGER | TPORT_TYPEF_ROW_GROUPS));
}

const tport_type_traits *tport_type_revision(const tport_type_traits *t, const char *revision) {
    for (size_t i = 0; t && i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].family, t->family) && !strcmp(table[i].revision, revision))
            return &table[i];
    return NULL;
}
