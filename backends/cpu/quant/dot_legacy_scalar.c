/* Scalar dot products of the 32-element legacy types (and their historical
 * revisions, IQ4_NL and MXFP4) with Q8_0 / Q8_1 activations.  Integer sums per
 * block, then one float multiply-add per block, as ggml's generic code. */
#include "quant_kernels.h"

const int8_t CPUQ(kvalues_iq4nl)[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                        1,    13,   25,  38,  53,  69,  89,  113};
const int8_t CPUQ(kvalues_mxfp4)[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* A weight block unpacked to 32 signed integers plus its scales. */
typedef struct wblock {
    int q[32];
    float d, m; /* y = q*d (+ m) */
} wblock;

typedef void (*unpack_fn)(const uint8_t *x, wblock *w);

static void unpack_nibbles(const uint8_t *qs, int q[32], int interleaved, int offset) {
    for (int j = 0; j < 16; j++) {
        const int lo = qs[j] & 15, hi = qs[j] >> 4;
        if (interleaved) {
            q[2 * j] = lo - offset;
            q[2 * j + 1] = hi - offset;
        } else {
            q[j] = lo - offset;
            q[j + 16] = hi - offset;
        }
    }
}

static void add_qh(const uint8_t *qh4, int q[32], int offset) {
    const uint32_t qh = cpuq_u32(qh4);
    for (int j = 0; j < 32; j++)
        q[j] += (int)((qh >> j) & 1) << 4;
    for (int j = 0; j < 32; j++)
        q[j] -= offset;
}

static void un_q4_0(const uint8_t *x, wblock *w) { w->d = cpuq_half(x), w->m = 0, unpack_nibbles(x + 2, w->q, 0, 8); }
static void un_q4_1(const uint8_t *x, wblock *w) {
    w->d = cpuq_half(x), w->m = cpuq_half(x + 2), unpack_nibbles(x + 4, w->q, 0, 0);
}
static void un_q5_0(const uint8_t *x, wblock *w) {
    w->d = cpuq_half(x), w->m = 0, unpack_nibbles(x + 6, w->q, 0, 0), add_qh(x + 2, w->q, 16);
}
static void un_q5_1(const uint8_t *x, wblock *w) {
    w->d = cpuq_half(x), w->m = cpuq_half(x + 2), unpack_nibbles(x + 8, w->q, 0, 0), add_qh(x + 4, w->q, 0);
}
static void un_q8_0(const uint8_t *x, wblock *w) {
    w->d = cpuq_half(x), w->m = 0;
    for (int j = 0; j < 32; j++)
        w->q[j] = (int8_t)x[2 + j];
}
static void un_iq4_nl(const uint8_t *x, wblock *w) {
    w->d = cpuq_half(x), w->m = 0;
    for (int j = 0; j < 16; j++) {
        w->q[j] = CPUQ(kvalues_iq4nl)[x[2 + j] & 15];
        w->q[j + 16] = CPUQ(kvalues_iq4nl)[x[2 + j] >> 4];
    }
}
/* MXFP4: codes from the doubled E2M1 table, scale 2^(e-128). */
static void un_mxfp4(const uint8_t *x, wblock *w) {
    w->d = cpuq_e8m0_half(x[0]), w->m = 0;
    for (int j = 0; j < 16; j++) {
        w->q[j] = CPUQ(kvalues_mxfp4)[x[1 + j] & 15];
        w->q[j + 16] = CPUQ(kvalues_mxfp4)[x[1 + j] >> 4];
    }
}
static void un_q4_0_qnt0(const uint8_t *x, wblock *w) { w->d = cpuq_f32(x), w->m = 0, unpack_nibbles(x + 4, w->q, 1, 8); }
static void un_q4_0_qnt1(const uint8_t *x, wblock *w) { w->d = cpuq_f32(x), w->m = 0, unpack_nibbles(x + 4, w->q, 0, 8); }
static void un_q4_1_qnt0(const uint8_t *x, wblock *w) {
    w->d = cpuq_f32(x), w->m = cpuq_f32(x + 4), unpack_nibbles(x + 8, w->q, 1, 0);
}
static void un_q4_1_qnt1(const uint8_t *x, wblock *w) {
    w->d = cpuq_f32(x), w->m = cpuq_f32(x + 4), unpack_nibbles(x + 8, w->q, 0, 0);
}
static void un_q5_0_qnt0(const uint8_t *x, wblock *w) {
    w->d = cpuq_half(x), w->m = 0, unpack_nibbles(x + 6, w->q, 1, 0), add_qh(x + 2, w->q, 16);
}
static void un_q5_1_qnt0(const uint8_t *x, wblock *w) {
    w->d = cpuq_half(x), w->m = cpuq_half(x + 2), unpack_nibbles(x + 8, w->q, 1, 0), add_qh(x + 4, w->q, 0);
}
static void un_q8_0_qnt1(const uint8_t *x, wblock *w) {
    w->d = cpuq_f32(x), w->m = 0;
    for (int j = 0; j < 32; j++)
        w->q[j] = (int8_t)x[4 + j];
}

/* Weights without a min against Q8_0: sum += d_x*d_y * sum(qx*qy). */
static void dot_vs_q8_0(int64_t n, float *s, const uint8_t *x, const uint8_t *y, int bx, unpack_fn un) {
    float sum = 0;
    wblock w;
    for (int64_t b = 0; b < n / 32; b++, x += bx, y += BQ8_0) {
        un(x, &w);
        int isum = 0;
        for (int j = 0; j < 32; j++)
            isum += w.q[j] * (int8_t)y[2 + j];
        sum += (float)isum * (w.d * cpuq_half(y));
    }
    *s = sum;
}

/* Weights with a min against Q8_1: sum += d_x*d_y*sum(qx*qy) + m_x*s_y
 * (s_y = d_y * sum(qy), stored in the Q8_1 block). */
static void dot_vs_q8_1(int64_t n, float *s, const uint8_t *x, const uint8_t *y, int bx, unpack_fn un) {
    float sum = 0;
    wblock w;
    for (int64_t b = 0; b < n / 32; b++, x += bx, y += BQ8_1) {
        un(x, &w);
        int isum = 0;
        for (int j = 0; j < 32; j++)
            isum += w.q[j] * (int8_t)y[4 + j];
        sum += (w.d * cpuq_half(y)) * (float)isum + w.m * cpuq_half(y + 2);
    }
    *s = sum;
}

#define DOT8_0(name, bytes)                                                    \
    static void dot_##name(int64_t n, float *s, const void *x, const void *y) { \
        dot_vs_q8_0(n, s, x, y, bytes, un_##name);                             \
    }
#define DOT8_1(name, bytes)                                                    \
    static void dot_##name(int64_t n, float *s, const void *x, const void *y) { \
        dot_vs_q8_1(n, s, x, y, bytes, un_##name);                             \
    }
DOT8_0(q4_0, BQ4_0)
DOT8_1(q4_1, BQ4_1)
DOT8_0(q5_0, BQ5_0)
DOT8_1(q5_1, BQ5_1)
DOT8_0(q8_0, BQ8_0)
DOT8_0(iq4_nl, BIQ4_NL)
DOT8_0(mxfp4, BMXFP4)
DOT8_0(q4_0_qnt0, BQ4_0_F32)
DOT8_0(q4_0_qnt1, BQ4_0_F32)
DOT8_1(q4_1_qnt0, BQ4_1_F32)
DOT8_1(q4_1_qnt1, BQ4_1_F32)
DOT8_0(q5_0_qnt0, BQ5_0)
DOT8_1(q5_1_qnt0, BQ5_1)
DOT8_0(q8_0_qnt1, BQ8_0_F32)

/* Q4_2 (16 per block, interleaved, f16 d): two blocks per Q8_0 block. */
static void dot_q4_2_qnt0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t b = 0; b < n / 32; b++, y += BQ8_0) {
        const float dy = cpuq_half(y);
        for (int h = 0; h < 2; h++, x += BQ4_2) {
            int isum = 0;
            for (int j = 0; j < 8; j++) {
                isum += ((x[2 + j] & 15) - 8) * (int8_t)y[2 + 16 * h + 2 * j];
                isum += ((x[2 + j] >> 4) - 8) * (int8_t)y[2 + 16 * h + 2 * j + 1];
            }
            sum += (float)isum * (cpuq_half(x) * dy);
        }
    }
    *s = sum;
}

/* Q4_3 (16 per block, interleaved, f16 d and m) against Q8_1: each half
 * has its own min, so the activations' sums are taken per half. */
static void dot_q4_3_qnt0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t b = 0; b < n / 32; b++, y += BQ8_1) {
        const float dy = cpuq_half(y);
        for (int h = 0; h < 2; h++, x += BQ4_3) {
            int isum = 0, ysum = 0;
            for (int j = 0; j < 8; j++) {
                const int y0 = (int8_t)y[4 + 16 * h + 2 * j], y1 = (int8_t)y[4 + 16 * h + 2 * j + 1];
                isum += (x[4 + j] & 15) * y0 + (x[4 + j] >> 4) * y1;
                ysum += y0 + y1;
            }
            sum += (cpuq_half(x) * dy) * (float)isum + cpuq_half(x + 2) * (dy * (float)ysum);
        }
    }
    *s = sum;
}

CPUQ_KERNEL_TABLE(scalar_legacy_kernel,
                  {TPORT_TYPE_Q4_0, dot_q4_0},
                  {TPORT_TYPE_Q4_1, dot_q4_1},
                  {TPORT_TYPE_Q5_0, dot_q5_0},
                  {TPORT_TYPE_Q5_1, dot_q5_1},
                  {TPORT_TYPE_Q8_0, dot_q8_0},
                  {TPORT_TYPE_IQ4_NL, dot_iq4_nl},
                  {TPORT_TYPE_MXFP4, dot_mxfp4},
                  {TPORT_TYPE_Q4_0_QNT0, dot_q4_0_qnt0},
                  {TPORT_TYPE_Q4_0_QNT1, dot_q4_0_qnt1},
                  {TPORT_TYPE_Q4_1_QNT0, dot_q4_1_qnt0},
                  {TPORT_TYPE_Q4_1_QNT1, dot_q4_1_qnt1},
                  {TPORT_TYPE_Q4_2_QNT0, dot_q4_2_qnt0},
                  {TPORT_TYPE_Q4_3_QNT0, dot_q4_3_qnt0},
                  {TPORT_TYPE_Q5_0_QNT0, dot_q5_0_qnt0},
                  {TPORT_TYPE_Q5_1_QNT0, dot_q5_1_qnt0},
                  {TPORT_TYPE_Q8_0_QNT1, dot_q8_0_qnt1})
