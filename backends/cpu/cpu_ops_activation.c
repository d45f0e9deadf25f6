/* Element-wise f32 ops of the architectures beyond llama: the GELU
 * llama.cpp's CPU backend computes (through a 65536-entry f16 table), the
 * erf GELU, tanh and clamp.  Work is split by rows. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "cpu_internal.h"

#define GELU_COEF_A 0.044715f
#define SQRT_2_OVER_PI 0.79788456080286535588f
#define SQRT_2_INV 0.70710678118654752440f

/* gelu of every f16 value, rounded to f16 and widened back: what ggml's
 * ggml_table_gelu_f16 holds, built with the host's reference f16
 * conversions. */
static float gelu_table[65536];
static bool gelu_ready;
static pthread_once_t gelu_once = PTHREAD_ONCE_INIT;

static float gelu_tanh(float x) {
    return 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * x * (1.0f + GELU_COEF_A * x * x)));
}

static void gelu_table_build(void) {
    static uint16_t bits[65536];
    static float x[65536];
    for (uint32_t i = 0; i < 65536; i++)
        bits[i] = (uint16_t)i;
    if (cpu_host->to_float(TPORT_TYPE_F16, bits, x, 65536) != TPORT_STATUS_OK)
        return;
    for (uint32_t i = 0; i < 65536; i++)
        x[i] = gelu_tanh(x[i]);
    if (cpu_host->from_float(TPORT_TYPE_F16, x, bits, 65536) != TPORT_STATUS_OK ||
        cpu_host->to_float(TPORT_TYPE_F16, bits, gelu_table, 65536) != TPORT_STATUS_OK)
        return;
    gelu_ready = true;
}

/* Once per process, by every thread before it reads the table; false if
 * the host cannot convert f16. */
static bool gelu_table_init(void) {
    pthread_once(&gelu_once, gelu_table_build);
    return gelu_ready;
}

static void gelu_f16_row(int64_t n, const float *x, float *y, uint16_t *h) {
    /* x to f16 with the host's reference (round to nearest even), as ggml's
     * GGML_CPU_FP32_TO_FP16 */
    if (!cpu_f32_to_f16(x, h, n))
        memset(h, 0, (size_t)n * sizeof *h);
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] <= -10.0f ? 0.0f : x[i] >= 10.0f ? x[i] : gelu_table[h[i]];
}

static void activation_task(void *arg, int ith, int nth) {
    cpu_op *op = arg;
    const tport_tensor_view *d = op->dst, *a = op->src[0];
    int64_t n = d->ne[0];
    float *abuf = (float *)cpu_thread_scratch(op, ith);
    uint16_t *hbuf = (uint16_t *)(abuf + n);
    tport_params_clamp c = {0.0f, 0.0f};
    if (d->op == TPORT_OP_GELU_F16 && !gelu_table_init()) {
        cpu_op_fail(op, TPORT_STATUS_ERROR, "gelu_f16: the host cannot convert f16");
        return;
    }
    if (d->op == TPORT_OP_CLAMP)
        memcpy(&c, d->params, sizeof c);
    int64_t r0, r1;
    cpu_split(cpu_nrows(d), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        cpu_unravel_row(d, r, &i1, &i2, &i3);
        const float *x = cpu_row_f32(a, i1, i2, i3, abuf);
        float *y = (float *)cpu_row(d, i1, i2, i3);
        switch (d->op) {
        case TPORT_OP_GELU_F16:
            gelu_f16_row(n, x, y, hbuf);
            break;
        case TPORT_OP_GELU_ERF:
            for (int64_t i = 0; i < n; i++)
                y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * SQRT_2_INV));
            break;
        case TPORT_OP_TANH:
            for (int64_t i = 0; i < n; i++)
                y[i] = tanhf(x[i]);
            break;
        default: /* clamp */
            for (int64_t i = 0; i < n; i++)
                y[i] = x[i] < c.min ? c.min : x[i] > c.max ? c.max : x[i];
            break;
        }
    }
}

void cpu_run_activation(cpu_ctx *ctx, cpu_op *op) {
    cpu_parallel(ctx, activation_task, op, op->nth);
}
