/* quant_bench: dequantize and dot-product throughput of every quantized
 * type, in GB/s of weight bytes, next to this machine's memory bandwidth
 * measured in the same run.  Not a test: numbers only.  See README.md.
 *
 * Kernels: the scalar and SSE2 ones of the plain x86-64 build (libtport's
 * copy), and when this CPU has them the AVX2 and AVX-512 copies of
 * backends/cpu/quant compiled into this program under other names
 * (bench/CMakeLists.txt); 1 and 2 threads splitting the rows. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_quant.h"
#include "quant/type_table.h"

/* The SIMD copies (NULL-returning stubs when not built for x86-64). */
cpu_vec_dot_fn avx2b_vec_dot_for(tport_type_id type);
cpu_vec_dot_fn avx2b_vec_dot_scalar_for(tport_type_id type);
cpu_vec_dot_fn avx512b_vec_dot_for(tport_type_id type);
cpu_vec_dot_fn avx512b_vec_dot_scalar_for(tport_type_id type);

/* The SIMD kernel of a copy, or NULL when that copy only has scalar code
 * for the type. */
static cpu_vec_dot_fn simd_only(cpu_vec_dot_fn best, cpu_vec_dot_fn scalar) {
    return best != scalar ? best : NULL;
}

#define K 4096 /* row length: a multiple of every block size */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double min_seconds = 0.1;

/* ---- memory bandwidth --------------------------------------------------- */
typedef struct read_job {
    const uint64_t *p;
    size_t n;
    uint64_t sum;
} read_job;

/* Whole cache lines a step, in the widest loads this CPU has: on a 2-vCPU
 * Xeon a loop of 8-, 16- or 32-byte loads keeps too few lines in flight
 * and measures about 11.5 GB/s at 1 thread, 512-bit loads 15-16 (what
 * the AVX-512 kernels reach). */
typedef uint64_t line_vec __attribute__((vector_size(64)));

static inline __attribute__((always_inline)) uint64_t sum_lines(const line_vec *p, size_t lines) {
    line_vec s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    for (size_t i = 0; i + 4 <= lines; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
    }
    line_vec s = s0 + s1 + s2 + s3;
    uint64_t sum = 0;
    for (int i = 0; i < 8; i++)
        sum += s[i];
    return sum;
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static uint64_t sum_lines_avx512(const line_vec *p, size_t lines) {
    return sum_lines(p, lines);
}
#endif

static uint64_t sum_lines_plain(const line_vec *p, size_t lines) {
    return sum_lines(p, lines);
}

static uint64_t (*sum_lines_best)(const line_vec *, size_t) = sum_lines_plain;

static void *read_worker(void *arg) {
    read_job *j = arg;
    j->sum = sum_lines_best((const line_vec *)(const void *)j->p, j->n / 8);
    return NULL;
}

static double read_bandwidth(const uint64_t *buf, size_t bytes, int threads) {
    int reps = 0;
    uint64_t sink = 0;
    const double t0 = now();
    double t;
    do {
        pthread_t th[2];
        read_job jobs[2];
        const size_t words = bytes / 8 / (size_t)threads;
        for (int i = 0; i < threads; i++) {
            jobs[i] = (read_job){buf + (size_t)i * words, words, 0};
            pthread_create(&th[i], NULL, read_worker, &jobs[i]);
        }
        for (int i = 0; i < threads; i++) {
            pthread_join(th[i], NULL);
            sink += jobs[i].sum;
        }
        reps++;
    } while ((t = now() - t0) < min_seconds);
    if (sink == 42) /* keep the reads */
        putchar(' ');
    return (double)bytes * reps / t / 1e9;
}

static double memcpy_bandwidth(void *dst, const void *src, size_t bytes) {
    int reps = 0;
    const double t0 = now();
    double t;
    do {
        memcpy(dst, src, bytes);
        reps++;
    } while ((t = now() - t0) < min_seconds);
    return (double)bytes * reps / t / 1e9; /* bytes copied (read once, written once) */
}

/* ---- f32 multiply-add peak ---------------------------------------------- */
/* Lane multiply-adds per second in FMA_CHAINS independent chains of the
 * widest vectors this CPU has: the ceiling of any exact f32 GEMM (f16
 * weights included, which the CPU backend multiplies as f32), against
 * which prompt-processing rates are read.  12 chains hide a 4-cycle
 * latency at two FMA units. */
#define FMA_CHAINS 12
#define FMA_STEPS 1000000

#if defined(__x86_64__)
#include <immintrin.h>

/* Twelve named chains, not an array (GCC keeps an array in memory). */
#define FMA_BODY(VEC, SET1, FMA, ADD)                                                                        \
    VEC m = SET1(0.9999999f), c = SET1(1e-7f);                                                               \
    VEC x0 = SET1(1), x1 = SET1(2), x2 = SET1(3), x3 = SET1(4), x4 = SET1(5), x5 = SET1(6);                 \
    VEC x6 = SET1(7), x7 = SET1(8), x8 = SET1(9), x9 = SET1(10), x10 = SET1(11), x11 = SET1(12);            \
    for (long i = 0; i < FMA_STEPS; i++) {                                                                   \
        x0 = FMA(x0, m, c), x1 = FMA(x1, m, c), x2 = FMA(x2, m, c), x3 = FMA(x3, m, c);                     \
        x4 = FMA(x4, m, c), x5 = FMA(x5, m, c), x6 = FMA(x6, m, c), x7 = FMA(x7, m, c);                     \
        x8 = FMA(x8, m, c), x9 = FMA(x9, m, c), x10 = FMA(x10, m, c), x11 = FMA(x11, m, c);                 \
    }                                                                                                        \
    VEC t = ADD(ADD(ADD(x0, x1), ADD(x2, x3)), ADD(ADD(x4, x5), ADD(x6, x7)));                               \
    t = ADD(t, ADD(ADD(x8, x9), ADD(x10, x11)));                                                             \
    float out[sizeof(VEC) / sizeof(float)];                                                                  \
    memcpy(out, &t, sizeof out);                                                                             \
    return out[0];

__attribute__((target("avx512f"))) static float fma_steps_avx512(void) {
    FMA_BODY(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps)
}
__attribute__((target("avx2,fma"))) static float fma_steps_avx2(void) {
    FMA_BODY(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps)
}
#endif

typedef struct fma_job {
    double rate; /* lane multiply-adds per second */
    float sink;
} fma_job;

static int fma_lanes; /* lanes of the vectors of fma_best, 0: no probe */
static float (*fma_best)(void);

static void *fma_worker(void *arg) {
    fma_job *j = arg;
    int reps = 0;
    const double t0 = now();
    double t;
    do {
        j->sink += fma_best();
        reps++;
    } while ((t = now() - t0) < min_seconds);
    j->rate = (double)reps * FMA_STEPS * FMA_CHAINS * fma_lanes / t;
    return NULL;
}

/* G lane multiply-adds per second summed over `threads` threads running
 * at once. */
static double fma_peak(int threads) {
    pthread_t th[2];
    fma_job jobs[2] = {{0, 0}, {0, 0}};
    for (int i = 1; i < threads; i++)
        pthread_create(&th[i], NULL, fma_worker, &jobs[i]);
    fma_worker(&jobs[0]);
    for (int i = 1; i < threads; i++)
        pthread_join(th[i], NULL);
    if (jobs[0].sink + jobs[1].sink == 42) /* keep the chains */
        putchar(' ');
    return (jobs[0].rate + jobs[1].rate) / 1e9;
}

/* ---- dot products (matrix x vector, the generation-phase shape) -------- */
typedef struct dot_job {
    cpu_vec_dot_fn fn;
    const uint8_t *w;
    const void *act;
    size_t row_bytes;
    int64_t row0, row1;
    float out;
} dot_job;

static void *dot_worker(void *arg) {
    dot_job *j = arg;
    float acc = 0, s;
    for (int64_t r = j->row0; r < j->row1; r++) {
        j->fn(K, &s, j->w + (size_t)r * j->row_bytes, j->act);
        acc += s;
    }
    j->out = acc;
    return NULL;
}

static double dot_throughput(cpu_vec_dot_fn fn, const uint8_t *w, size_t row_bytes, int64_t rows, const void *act,
                             int threads) {
    int reps = 0;
    const double t0 = now();
    double t;
    do {
        pthread_t th[2];
        dot_job jobs[2];
        for (int i = 0; i < threads; i++) {
            jobs[i] = (dot_job){fn, w, act, row_bytes, rows * i / threads, rows * (i + 1) / threads, 0};
            pthread_create(&th[i], NULL, dot_worker, &jobs[i]);
        }
        for (int i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
        reps++;
    } while ((t = now() - t0) < min_seconds);
    return (double)row_bytes * (double)rows * reps / t / 1e9;
}

static double dequant_throughput(const tport_type_traits *t, const uint8_t *w, size_t bytes, int64_t n) {
    enum { CHUNK = 16384 };
    static float out[CHUNK];
    const size_t chunk_bytes = (size_t)(CHUNK / t->info.block_size) * t->info.block_bytes;
    int reps = 0;
    const double t0 = now();
    double el;
    do {
        for (int64_t done = 0; done + CHUNK <= n; done += CHUNK)
            t->to_float(w + (size_t)(done / CHUNK) * chunk_bytes, out, CHUNK);
        reps++;
    } while ((el = now() - t0) < min_seconds);
    return (double)bytes * reps / el / 1e9;
}

static int listed(const char *list, const char *name) {
    if (!list)
        return 1;
    const size_t len = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += len)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == 0))
            return 1;
    return 0;
}

static void usage(void) {
    printf("usage: quant_bench [--mb N] [--types a,b,...] [--seconds S]\n"
           "  --mb N       weight matrix size in MiB of f32 equivalent (default 64)\n"
           "  --types L    only these types (names as in `tport types`)\n"
           "  --seconds S  minimum time per measurement (default 0.1)\n");
}

static void print_rate(cpu_vec_dot_fn fn, const uint8_t *w, size_t row_bytes, int64_t rows, const void *act) {
    if (!fn) {
        printf(" %7s %7s", "-", "-");
        return;
    }
    printf(" %7.2f %7.2f", dot_throughput(fn, w, row_bytes, rows, act, 1),
           dot_throughput(fn, w, row_bytes, rows, act, 2));
}

int main(int argc, char **argv) {
    int64_t mb = 64;
    const char *types = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mb") && i + 1 < argc)
            mb = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--types") && i + 1 < argc)
            types = argv[++i];
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            min_seconds = atof(argv[++i]);
        else {
            usage();
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (mb < 1 || mb > 4096) {
        fprintf(stderr, "quant_bench: --mb must be in [1, 4096]\n");
        return 2;
    }
    __builtin_cpu_init();
    const int has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const int has_avx512 = has_avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                           __builtin_cpu_supports("avx512vnni");

#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) {
        sum_lines_best = sum_lines_avx512;
        fma_best = fma_steps_avx512, fma_lanes = 16;
    } else if (has_avx2) {
        fma_best = fma_steps_avx2, fma_lanes = 8;
    }
#endif
    const int64_t n = mb * 1024 * 1024 / 4 / K * K; /* elements */
    const int64_t rows = n / K;

    /* memory bandwidth on a buffer of the largest weight size */
    const size_t big = (size_t)n * 4; /* also holds any weight matrix */
    uint64_t *a = aligned_alloc(64, big), *b = aligned_alloc(64, big); /* big: a multiple of 64 */
    if (!a || !b) {
        fprintf(stderr, "quant_bench: out of memory\n");
        return 1;
    }
    /* The first write of new memory pays its page faults (and, in a VM
     * that hands freed memory back to the host, the host's): what a
     * backend's own copy of the weights costs at start. */
    const double t0 = now();
    memset(a, 1, big);
    const double first_touch = (double)big / (now() - t0) / 1e9;
    memset(b, 2, big);
    printf("memory: read %.2f GB/s (1 thread), %.2f GB/s (2 threads); memcpy %.2f GB/s; first write of new memory "
           "%.2f GB/s  [%zu MiB buffer]\n",
           read_bandwidth(a, big, 1), read_bandwidth(a, big, 2), memcpy_bandwidth(b, a, big), first_touch, big >> 20);
    free(b);
    if (fma_lanes)
        printf("compute: f32 multiply-add peak %.1f G/s (1 thread), %.1f G/s (2 threads)  [%d chains of %d-lane "
               "FMA]\n",
               fma_peak(1), fma_peak(2), FMA_CHAINS, fma_lanes);
    printf("weights: %lld x %d elements; GB/s of weight bytes (higher is better)\n", (long long)rows, K);
    printf("ISA in this CPU: avx2 %s, avx512 %s\n\n", has_avx2 ? "yes" : "no", has_avx512 ? "yes" : "no");
    printf("%-10s %6s %8s | %-15s | %-15s | %-15s | %-15s\n", "type", "bits/w", "dequant", "dot scalar 1t 2t",
           "dot sse2 1t 2t", "dot avx2 1t 2t", "dot avx512 1t 2t");

    /* one tile of real quantized data, repeated over the matrix */
    enum { TILE = 64 * 1024 };
    float *xf = malloc(sizeof(float) * TILE);
    unsigned s = 12345;
    for (int i = 0; i < TILE; i++) {
        s = s * 1664525u + 1013904223u;
        xf[i] = (float)((int32_t)(s >> 8) - 8388608) / 8388608.0f;
    }
    uint8_t *w = (uint8_t *)a;
    static uint8_t act[K * 2];
    for (int i = 0; i < tport_traits_count(); i++) {
        const tport_type_traits *t = tport_traits_at(i);
        if (!t->info.is_quantized || !t->from_float || !listed(types, t->info.name))
            continue;
        const tport_type_traits *vt = tport_traits(t->info.vec_dot_type);
        const size_t row_bytes = (size_t)(K / t->info.block_size) * t->info.block_bytes;
        const size_t tile_bytes = (size_t)(TILE / t->info.block_size) * t->info.block_bytes;
        t->from_float(xf, w, TILE);
        const size_t total = row_bytes * (size_t)rows;
        for (size_t off = tile_bytes; off < total; off += tile_bytes)
            memcpy(w + off, w, off + tile_bytes <= total ? tile_bytes : total - off);
        if (vt && vt->from_float)
            vt->from_float(xf, act, K);
        printf("%-10s %6.3g %8.2f |", t->info.name, t->bits_per_weight, dequant_throughput(t, w, total, n));
        const tport_type_id id = t->info.id;
        print_rate(cpu_vec_dot_scalar_for(id), w, row_bytes, rows, act);
        printf(" |");
        print_rate(simd_only(cpu_vec_dot_for(id), cpu_vec_dot_scalar_for(id)), w, row_bytes, rows, act);
        printf(" |");
        print_rate(has_avx2 ? simd_only(avx2b_vec_dot_for(id), avx2b_vec_dot_scalar_for(id)) : NULL, w, row_bytes,
                   rows, act);
        printf(" |");
        print_rate(has_avx512 ? simd_only(avx512b_vec_dot_for(id), avx512b_vec_dot_scalar_for(id)) : NULL, w,
                   row_bytes, rows, act);
        printf("\n");
        fflush(stdout);
    }
    printf("\n'-': no kernel of that kind for the type, or the CPU lacks the ISA.  The\n"
           "AVX-512 column is the AVX-512 build of the kernels: it uses the AVX2 code\n"
           "where there is no AVX-512 kernel of its own.\n");
    free(xf);
    free(a);
    return 0;
}
