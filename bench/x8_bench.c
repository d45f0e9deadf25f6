/* x8_bench: the one- and two-column (generation) kernels of the Q4_K x8
 * layout (backends/cpu/cpu_mul_mat_x8_avx512.c), or those of other
 * column counts (--cols 1..8; 5..8: the batch kernel cpu_x8_dot8), in
 * GB/s of weight bytes streamed from memory, next to a plain read of the
 * same bytes, at 1 and 2 threads.  Not a test: numbers only.  See README.md.
 *
 * Rates per wall second and per CPU second of the slowest thread: on a
 * shared machine the second is the steadier (a descheduled thread's wait
 * is not counted), but memory traffic of the neighbours still shows. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_internal.h"

/* What the kernels' file takes from the rest of the backend (MXFP4's
 * kernels would bring its value table: never called here). */
uintptr_t cpu_stream_ahead = 2048, cpu_stream_ahead_f16 = 3072, cpu_batch_ahead = 8192;
#if CPU_AMX
bool cpu_amx_q8_on(void) { return false; }
#endif
void cpu_x8_mxfp4_dot(const uint8_t *group, int64_t K, const uint8_t *y, size_t y_stride, const cpu_x8_act *act,
                      size_t act_stride, int ncols, bool fold, float *out) {
    (void)group, (void)K, (void)y, (void)y_stride, (void)act, (void)act_stride, (void)ncols, (void)fold, (void)out;
    abort();
}
void cpu_x8_mxfp4_dot_pair(const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y, size_t y_stride,
                           const cpu_x8_act *act, size_t act_stride, bool fold, float *out) {
    (void)group, (void)group_stride, (void)K, (void)y, (void)y_stride, (void)act, (void)act_stride, (void)fold;
    (void)out;
    abort();
}

#define K 2048        /* a row: 8 super-blocks (OLMoE's and Llama-3.2-1B's hidden size) */
#define SB_BYTES 1184 /* a Q4_K x8 super-block: 8 rows x 256 elements */
#define Y_BYTES 292   /* a Q8_K block */

static uint8_t *weights;
static size_t ngroups, group_bytes;
static uint8_t ycols[8][Y_BYTES * (K / 256)];

typedef uint64_t line_vec __attribute__((vector_size(64)));

typedef struct job {
    size_t g0, g1;
    int ncols; /* 0: the plain read */
    double cpu;
    float sink;
} job;

static double seconds(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *run(void *arg) {
    job *j = arg;
    double c0 = seconds(CLOCK_THREAD_CPUTIME_ID);
    float s = 0;
    if (j->ncols) {
        float out[64];
        for (size_t g = j->g0; g < j->g1; g++) {
            if (j->ncols > 4) /* a batch's kernel (x8_task), one group */
                cpu_x8_dot8(CPU_LAYOUT_Q4_K_X8, weights + g * group_bytes, 0, K, ycols[0], sizeof ycols[0], NULL, 0,
                            j->ncols, out);
            else
                cpu_x8_dot(CPU_LAYOUT_Q4_K_X8, weights + g * group_bytes, K, ycols[0], sizeof ycols[0], NULL, 0,
                           j->ncols, out);
            s += out[3];
        }
    } else { /* whole lines in 512-bit loads, four sums in flight (as quant_bench) */
        const line_vec *p = (const line_vec *)(const void *)(weights + j->g0 * group_bytes);
        size_t lines = (j->g1 - j->g0) * group_bytes / 64;
        line_vec a = {0}, b = {0}, c = {0}, d = {0};
        for (size_t i = 0; i + 4 <= lines; i += 4)
            a += p[i], b += p[i + 1], c += p[i + 2], d += p[i + 3];
        a += b + c + d;
        for (int k = 0; k < 8; k++)
            s += (float)(a[k] & 1);
    }
    j->sink = s;
    j->cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - c0;
    return NULL;
}

/* The best of reps passes over the weights: GB/s per wall second and per
 * CPU second of the slowest thread. */
static void measure(int threads, int ncols, int reps, double *wall_gbs, double *cpu_gbs) {
    *wall_gbs = *cpu_gbs = 0;
    for (int r = 0; r < reps; r++) {
        pthread_t th[2];
        job jobs[2];
        double t0 = seconds(CLOCK_MONOTONIC), cpu = 0;
        for (int i = 0; i < threads; i++) {
            jobs[i] = (job){ngroups * (size_t)i / (size_t)threads, ngroups * (size_t)(i + 1) / (size_t)threads, ncols,
                            0, 0};
            pthread_create(&th[i], NULL, run, &jobs[i]);
        }
        for (int i = 0; i < threads; i++) {
            pthread_join(th[i], NULL);
            cpu = jobs[i].cpu > cpu ? jobs[i].cpu : cpu;
        }
        double wall = seconds(CLOCK_MONOTONIC) - t0, bytes = (double)(ngroups * group_bytes);
        if (bytes / wall / 1e9 > *wall_gbs)
            *wall_gbs = bytes / wall / 1e9;
        if (cpu > 0 && bytes / cpu / 1e9 > *cpu_gbs)
            *cpu_gbs = bytes / cpu / 1e9;
    }
}

int main(int argc, char **argv) {
    long mb = 768; /* past the last-level cache */
    int reps = 5;
    const char *cols = "1,2"; /* column counts to measure: 1..4 cpu_x8_dot, 5..8 cpu_x8_dot8 */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mb") && i + 1 < argc)
            mb = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cols") && i + 1 < argc)
            cols = argv[++i];
        else if (!strcmp(argv[i], "--ahead") && i + 1 < argc)
            cpu_stream_ahead = (uintptr_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--batch-ahead") && i + 1 < argc)
            cpu_batch_ahead = (uintptr_t)atol(argv[++i]);
        else {
            fprintf(stderr, "usage: x8_bench [--mb N] [--reps N] [--cols N,N..] [--ahead BYTES] [--batch-ahead BYTES]\n");
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512bw")) {
        printf("x8_bench: skipped (the 512-bit x8 kernels need AVX-512 VNNI)\n");
        return 0;
    }
    if (mb < 1 || reps < 1) {
        fprintf(stderr, "x8_bench: --mb and --reps must be positive\n");
        return 2;
    }
    group_bytes = (size_t)(K / 256) * SB_BYTES;
    ngroups = ((size_t)mb << 20) / group_bytes;
    weights = aligned_alloc(64, ngroups * group_bytes);
    if (!weights) {
        fprintf(stderr, "x8_bench: out of memory for %ld MiB\n", mb);
        return 1;
    }
    /* random quants; f16 scales about 0.01, 6-bit sub-block scales and mins */
    uint32_t x = 12345;
    for (size_t i = 0; i < ngroups * group_bytes; i++) {
        x = x * 1664525u + 1013904223u;
        weights[i] = (uint8_t)(x >> 24);
    }
    for (size_t sb = 0; sb < ngroups * (K / 256); sb++) {
        uint8_t *s = weights + sb * SB_BYTES;
        for (int i = 0; i < 32; i += 2)
            s[i + 1] = 0x20; /* exponent of about 0.01 */
        for (int i = 32; i < 160; i++)
            s[i] &= 63;
    }
    for (int c = 0; c < 8; c++)
        for (int b = 0; b < K / 256; b++) {
            uint8_t *y = ycols[c] + Y_BYTES * b;
            float d = 0.01f;
            memcpy(y, &d, 4);
            int16_t bsums[16] = {0};
            for (int i = 0; i < 256; i++) {
                x = x * 1664525u + 1013904223u;
                int8_t q = (int8_t)((int)(x >> 24) % 255 - 127);
                y[4 + i] = (uint8_t)q;
                bsums[i / 16] = (int16_t)(bsums[i / 16] + q);
            }
            memcpy(y + 260, bsums, sizeof bsums);
        }
    printf("Q4_K x8 kernels, %zu MiB of weights (K %d), prefetch %zu bytes ahead (5..8 columns %zu); GB/s best of "
           "%d\n",
           ngroups * group_bytes >> 20, K, (size_t)cpu_stream_ahead, (size_t)cpu_batch_ahead, reps);
    printf("%-8s %-16s %10s %10s %9s\n", "threads", "kernel", "wall", "cpu", "of read");
    for (int t = 1; t <= 2; t++) {
        double read_wall, read_cpu;
        measure(t, 0, reps, &read_wall, &read_cpu);
        printf("%-8d %-16s %10.2f %10.2f %9s\n", t, "plain read", read_wall, read_cpu, "");
        for (const char *p = cols; *p;) {
            char *end;
            long nc = strtol(p, &end, 10);
            if (end == p || nc < 1 || nc > 8) {
                fprintf(stderr, "x8_bench: --cols takes counts 1..8\n");
                return 2;
            }
            p = *end == ',' ? end + 1 : end;
            double w, c;
            char name[32];
            snprintf(name, sizeof name, "%ld column%s", nc, nc > 1 ? "s" : "");
            measure(t, (int)nc, reps, &w, &c);
            printf("%-8d %-16s %10.2f %10.2f %9.2f\n", t, name, w, c, read_cpu > 0 ? c / read_cpu : 0);
        }
    }
    free(weights);
    return 0;
}
