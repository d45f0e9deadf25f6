/* Historical quantizer rules that are not their layout's default
 * (formats.md 3.1-3.3).  Every rule here writes the QNT0 layout with
 * interleaved nibbles, qs[j] = q[2j] | q[2j+1] << 4:
 *
 *  q4_0_qnt0 "amax7"   (2023-03-11 .. 04-25): d = amax/7, f32 d,
 *                      q = (int8)roundf(x*id) + 8
 *  q4_1_qnt0 "flt-min" (llama.cpp utils.cpp, 2023-03-20 .. 03-29): the
 *                      running max starts at FLT_MIN (positive) instead of
 *                      -FLT_MAX, so a block with no value above FLT_MIN
 *                      (all zero, or all negative) gets max = FLT_MIN
 *  q4_2_qnt0 "amax7"   (ggml@c86c70f9): d = amax/7, f16 d,
 *                      q = (uint8)(x*id + 8.5f)
 *  q4_2_qnt0 "rmse"    (ggml@92b961cd .. @32f22c0e): a search over eight
 *                      candidate scales for the one that minimises the
 *                      squared error, then a least-squares scale.
 *
 * As elsewhere in src/quant: no FMA contraction, the f32 id is used even
 * when d is stored as f16, and float -> int conversions of NaN/Inf behave
 * as on x86-64 (q_cvtt). */
#include <float.h>

#include "quant_impl.h"
#include "quant_rules.h"

static void pack_interleaved(uint8_t *qs, const uint8_t *q, int n) {
    for (int j = 0; j < n / 2; j++)
        qs[j] = (uint8_t)(q[2 * j] | q[2 * j + 1] << 4);
}

/* ggml's MAX(amax, |x|) loop: a NaN wins only if it is last. */
static float abs_max(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    return amax;
}

/* ---- q4_0_qnt0 "amax7": {f32 d; u8 qs[16]} ----------------------------- */
void tport_quant_q4_0_qnt0_amax7(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 20) {
        const float d = abs_max(x, 32) / 7;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f32(y, d);
        uint8_t q[32];
        for (int j = 0; j < 32; j++)
            q[j] = q_to_u8(q_to_i8(q_cvtt(roundf(x[j] * id))) + 8);
        pack_interleaved(y + 4, q, 32);
    }
}

/* ---- q4_1_qnt0 "flt-min": {f32 d; f32 m; u8 qs[16]} -------------------- */
void tport_quant_q4_1_qnt0_flt_min(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 24) {
        float min = FLT_MAX, max = FLT_MIN; /* the quirk: FLT_MIN, not -FLT_MAX */
        for (int j = 0; j < 32; j++) {
            if (x[j] < min)
                min = x[j];
            if (x[j] > max)
                max = x[j];
        }
        const float d = (max - min) / 15;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f32(y, d);
        q_wr_f32(y + 4, min);
        uint8_t q[32];
        for (int j = 0; j < 32; j++)
            q[j] = q_to_u8(q_cvtt(roundf((x[j] - min) * id)));
        pack_interleaved(y + 8, q, 32);
    }
}

/* ---- q4_2_qnt0 "amax7": {f16 d; u8 qs[8]}, 16 elements ----------------- */
void tport_quant_q4_2_qnt0_amax7(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 16; b++, x += 16, y += 10) {
        const float d = abs_max(x, 16) / 7;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        uint8_t q[16];
        for (int j = 0; j < 16; j++)
            q[j] = q_to_u8(q_cvtt(x[j] * id + 8.5f));
        pack_interleaved(y + 2, q, 16);
    }
}

/* ---- q4_2_qnt0 "rmse" -------------------------------------------------- */
/* For each candidate c, iscale = c/amax; quantize with +iscale and with
 * -iscale (quants clamped to [-8, 7]) and keep the sign and candidate whose
 * (sum l*x)^2 / (sum l*l) is largest, i.e. whose least-squares fit leaves
 * the smallest squared error.  The stored scale is that fit,
 * sum(l*x) / sum(l*l), for the winning quants.  Sums of l*x are f32 in
 * element order, sums of l*l are ints, as upstream. */
#define RMSE_NMIN (-8)
#define RMSE_NMAX 7
static const float rmse_candidates[8] = {8.7f, 8.3f, 8.1f, 7.8f, 7.3f, 7.0f, 6.3f, 5.7f};

static int clamp_q(int l) { return q_max_i(RMSE_NMIN, q_min_i(RMSE_NMAX, l)); }

static float rmse_block(const float *x, int n, int8_t *L) {
    const float amax = abs_max(x, n);
    if (!amax) {
        for (int i = 0; i < n; i++)
            L[i] = 0;
        return 0.0f;
    }
    float best = 0.0f, best_iscale = 0.0f;
    for (int c = 0; c < 8; c++) {
        const float iscale = rmse_candidates[c] / amax;
        float sumlx_p = 0.0f, sumlx_m = 0.0f;
        int suml2_p = 0, suml2_m = 0;
        for (int i = 0; i < n; i++) {
            const int l = q_nearest_int(iscale * x[i]);
            const int lp = clamp_q(l), lm = clamp_q(-l);
            sumlx_p += x[i] * (float)lp;
            suml2_p += lp * lp;
            sumlx_m += x[i] * (float)lm;
            suml2_m += lm * lm;
        }
        const float p2 = sumlx_p * sumlx_p, m2 = sumlx_m * sumlx_m;
        if (p2 * (float)suml2_m > m2 * (float)suml2_p) {
            if (p2 > best * (float)suml2_p) {
                best = p2 / (float)suml2_p;
                best_iscale = iscale;
            }
        } else if (m2 > best * (float)suml2_m) {
            best = m2 / (float)suml2_m;
            best_iscale = -iscale;
        }
    }
    float sumlx = 0.0f;
    int suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = clamp_q(q_nearest_int(best_iscale * x[i]));
        sumlx += x[i] * (float)l;
        suml2 += l * l;
        L[i] = (int8_t)l;
    }
    /* suml2 == 0 only when no candidate won (a NaN input); then sumlx is 0
     * too and upstream's 0/0 stored NaN. */
    return suml2 ? sumlx / (float)suml2 : NAN;
}

void tport_quant_q4_2_qnt0_rmse(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 16; b++, x += 16, y += 10) {
        int8_t L[16];
        q_wr_f16(y, rmse_block(x, 16, L));
        uint8_t q[16];
        for (int j = 0; j < 16; j++)
            q[j] = (uint8_t)(L[j] + 8);
        pack_interleaved(y + 2, q, 16);
    }
}
