/* The CPU backend's quantized dot products (backends/cpu/quant).
 *
 * Every kernel against the exact dot product of the dequantized operands
 * (double precision), on odd block counts.  Tolerance: 1e-5 * sum|x*y|
 * (integer sums are exact; only the per-block float scaling and the
 * cross-block float sums round), except for weights paired with Q8_1,
 * whose kernels use the block sum s = f16(d * sum(q)) as ggml's do: that
 * f16 rounding (2^-11 relative) is allowed for, 1e-3 * sum|x*y|.
 *
 * Every SIMD kernel is also compared with the scalar one of the same copy
 * (tolerance 1e-5 * sum|x*y|: only the float summation order differs):
 * here the SSE2 kernels of the plain x86-64 build in libtport; built twice
 * more with TEST_SIMD set ("avx2", "avx512"), the test's own copy of the
 * kernels is compiled with those instruction sets.  That part runs only if
 * this CPU has the instruction set, else the test says "skipped".
 *
 * The SIMD kernels of the Q8_K lattice and ternary types (IQ2_*, IQ3_*,
 * IQ1_*, TQ*_0) form the scalar kernels' integers and float operations, so
 * they must equal them bit for bit: on raw random blocks (every byte value,
 * codes a quantizer never writes included) with extreme scales. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../test_util.h"
#include "simd_usable.h"
#include "cpu_quant.h"
#include "quant/quant_kernels.h"
#include "quant/type_table.h"

static unsigned long long rng = 7;

typedef struct operands {
    int64_t n;
    uint8_t *x, *y;
    double exact, magnitude; /* dot of dequantized values, sum |x*y| */
} operands;

static int make_operands(const tport_type_traits *t, operands *o) {
    const tport_type_traits *vt = tport_traits(t->info.vec_dot_type);
    if (!vt || !vt->from_float)
        return 0;
    const int64_t unit = t->info.block_size > vt->info.block_size ? t->info.block_size : vt->info.block_size;
    o->n = 7 * unit; /* an odd number of blocks: a 4-block SIMD step plus a tail */
    float *xf = malloc(sizeof(float) * (size_t)o->n), *yf = malloc(sizeof(float) * (size_t)o->n);
    o->x = malloc((size_t)(o->n / t->info.block_size * (int64_t)t->info.block_bytes));
    o->y = malloc((size_t)(o->n / vt->info.block_size * (int64_t)vt->info.block_bytes));
    for (int64_t i = 0; i < o->n; i++) {
        xf[i] = test_rng_uniform(&rng) * 0.5f + 0.1f; /* off-centre: mins matter */
        yf[i] = test_rng_uniform(&rng) * 2.0f;
    }
    if (t->from_float) {
        t->from_float(xf, o->x, o->n);
    } else { /* read-only types (no quantizer here): random blocks with a
              * sane f16 scale in front (IQ2_XXS, IQ2_XS, IQ1_S start with d) */
        const size_t nbytes = (size_t)(o->n / t->info.block_size * (int64_t)t->info.block_bytes);
        for (size_t i = 0; i < nbytes; i++)
            o->x[i] = (uint8_t)(test_rng_uniform(&rng) * 127.0f + 128.0f);
        for (size_t b = 0; b < nbytes; b += t->info.block_bytes) {
            o->x[b] = 0x1f; /* 0x211f: about 0.0101 */
            o->x[b + 1] = 0x21;
        }
    }
    vt->from_float(yf, o->y, o->n);
    t->to_float(o->x, xf, o->n);
    vt->to_float(o->y, yf, o->n);
    o->exact = o->magnitude = 0;
    for (int64_t i = 0; i < o->n; i++) {
        o->exact += (double)xf[i] * yf[i];
        o->magnitude += fabs((double)xf[i] * yf[i]);
    }
    free(xf);
    free(yf);
    return 1;
}

static void free_operands(operands *o) {
    free(o->x);
    free(o->y);
}

static void test_scalar_and_best(void) {
    int with_kernel = 0;
    for (int k = 0; k < tport_traits_count(); k++) {
        const tport_type_traits *t = tport_traits_at(k);
        if (!t->info.is_quantized)
            continue;
        cpu_vec_dot_fn scalar = cpu_vec_dot_scalar_for(t->info.id), best = cpu_vec_dot_for(t->info.id);
        CHECK((scalar == NULL) == (best == NULL), "%s: scalar and best kernels disagree on support", t->info.name);
        if (!scalar)
            continue;
        operands o;
        if (!make_operands(t, &o))
            continue;
        with_kernel++;
        const double tol = (t->info.vec_dot_type == TPORT_TYPE_Q8_1 ? 1e-3 : 1e-5) * o.magnitude + 1e-9;
        float s1 = NAN, s2 = NAN;
        scalar(o.n, &s1, o.x, o.y);
        best(o.n, &s2, o.x, o.y);
        CHECK(fabs(s1 - o.exact) <= tol, "%s scalar: %.9g, exact %.9g (tol %g)", t->info.name, (double)s1,
              o.exact, tol);
        CHECK(fabs(s2 - o.exact) <= tol, "%s best: %.9g, exact %.9g (tol %g)", t->info.name, (double)s2,
              o.exact, tol);
        float z = NAN;
        scalar(0, &z, o.x, o.y);
        CHECK(z == 0.0f, "%s: empty dot is %g", t->info.name, (double)z);
        free_operands(&o);
    }
    /* every current quantized weight type has a kernel (q8_1/q8_K are
     * activation types and have none) */
    CHECK(with_kernel >= 13 + 9 + 9 + 3, "only %d types have kernels", with_kernel);
    printf("kernels checked against exact dot products: %d types (best ISA: %s)\n", with_kernel,
           cpu_vec_dot_isa());
}


/* Every SIMD kernel of this build equals its scalar twin; the types in
 * must_have have one. */
static void test_simd_equals_scalar(const char *isa, const tport_type_id *must_have, int n_must) {
    for (int i = 0; i < n_must; i++)
        CHECK(cpu_vec_dot_for(must_have[i]) != cpu_vec_dot_scalar_for(must_have[i]), "type %u has no %s kernel",
              must_have[i], isa);
    int compared = 0;
    for (int k = 0; k < tport_traits_count(); k++) {
        const tport_type_traits *t = tport_traits_at(k);
        cpu_vec_dot_fn scalar = cpu_vec_dot_scalar_for(t->info.id), simd = cpu_vec_dot_for(t->info.id);
        if (!scalar || simd == scalar)
            continue;
        for (int rep = 0; rep < 20; rep++) {
            operands o;
            if (!make_operands(t, &o))
                break;
            float a = NAN, b = NAN;
            scalar(o.n, &a, o.x, o.y);
            simd(o.n, &b, o.x, o.y);
            CHECK(fabs((double)a - b) <= 1e-5 * o.magnitude + 1e-9, "%s %s: %.9g, scalar %.9g", t->info.name, isa,
                  (double)b, (double)a);
            free_operands(&o);
        }
        printf("%s %s kernel equals scalar\n", t->info.name, isa);
        compared++;
    }
    CHECK(compared >= n_must, "only %d %s kernels", compared, isa);
}

/* The Q8_K types whose SIMD kernels equal the scalar ones bit for bit, and
 * where their f16 block scale lies (-1: IQ1_M, spread over scale nibbles). */
static const struct {
    tport_type_id type;
    int d_at;
} exact_types[] = {
    {TPORT_TYPE_IQ2_XXS, 0}, {TPORT_TYPE_IQ2_XS, 0}, {TPORT_TYPE_IQ2_S, 0},  {TPORT_TYPE_IQ3_XXS, 0},
    {TPORT_TYPE_IQ3_S, 0},   {TPORT_TYPE_IQ1_S, 0},  {TPORT_TYPE_IQ1_M, -1}, {TPORT_TYPE_TQ1_0, 52},
    {TPORT_TYPE_TQ2_0, 64},
};

/* Raw Q8_K blocks {f32 d; i8 qs[256]; i16 bsums[16]}: values in [-127, 127]
 * (what Q8_K quantizers write), +-127 often, an extreme d now and then. */
static void random_q8k(uint8_t *y, int nb) {
    static const float ds[] = {1.0f / 127, 3.5e-3f, 1e-30f, 1e-40f /* subnormal */, 1e30f, -2.0f};
    for (int b = 0; b < nb; b++, y += 292) {
        const float d = ds[test_rng_next(&rng) % (sizeof ds / sizeof ds[0])];
        memcpy(y, &d, 4);
        for (int g = 0; g < 16; g++) {
            int bsum = 0;
            for (int j = 0; j < 16; j++) {
                const unsigned long long r = test_rng_next(&rng);
                const int v = r % 4 == 0 ? (r & 16 ? 127 : -127) : (int)((r >> 8) % 255) - 127;
                y[4 + 16 * g + j] = (uint8_t)(int8_t)v;
                bsum += v;
            }
            y[260 + 2 * g] = (uint8_t)(bsum & 0xff);
            y[261 + 2 * g] = (uint8_t)((unsigned)bsum >> 8 & 0xff);
        }
    }
}

static int same_float(float a, float b) { return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof a); }

/* Each SIMD kernel of the exact types against the scalar one, bit for bit. */
static void test_exact_iq(const char *isa, int need_simd) {
    static const uint16_t extremes[] = {0x7bff, 0xfbff, 0x0001, 0x8001, 0x0400, 0x3c00, 0x211f, 0x0000};
    for (size_t k = 0; k < sizeof exact_types / sizeof exact_types[0]; k++) {
        const tport_type_traits *t = tport_traits(exact_types[k].type);
        cpu_vec_dot_fn scalar = cpu_vec_dot_scalar_for(exact_types[k].type), simd = cpu_vec_dot_for(exact_types[k].type);
        CHECK(t && scalar && simd, "type %u: no kernel", exact_types[k].type);
        if (!t || !scalar || !simd)
            continue;
        CHECK(!need_simd || simd != scalar, "%s has no %s kernel", t->info.name, isa);
        if (simd == scalar)
            continue;
        const size_t bx = t->info.block_bytes;
        uint8_t *x = malloc(5 * bx), *y = malloc(5 * 292);
        int mismatches = 0;
        for (int rep = 0; rep < 200; rep++) {
            const int nb = rep < 2 ? 5 : 1 + (int)(test_rng_next(&rng) % 5);
            for (size_t i = 0; i < (size_t)nb * bx; i++) /* reps 0, 1: every byte value */
                x[i] = (uint8_t)(rep < 2 ? i + 128 * (size_t)rep : test_rng_next(&rng) >> 24);
            for (int b = 0; b < nb && exact_types[k].d_at >= 0 && rep >= 2; b++) {
                const unsigned long long r = test_rng_next(&rng);
                if (r % 3 == 0)
                    continue; /* a random scale */
                const uint16_t h = extremes[(r >> 8) % (sizeof extremes / sizeof extremes[0])];
                x[b * bx + (size_t)exact_types[k].d_at] = (uint8_t)h;
                x[b * bx + (size_t)exact_types[k].d_at + 1] = (uint8_t)(h >> 8);
            }
            random_q8k(y, nb);
            float a = NAN, c = NAN;
            scalar(nb * 256, &a, x, y);
            simd(nb * 256, &c, x, y);
            if (!same_float(a, c) && mismatches++ < 3)
                CHECK(0, "%s %s, %d blocks: %.9g, scalar %.9g", t->info.name, isa, nb, (double)c, (double)a);
        }
        CHECK(mismatches == 0, "%s %s: %d of 200 differ from scalar", t->info.name, isa, mismatches);
        printf("%s %s kernel equals scalar bit for bit\n", t->info.name, isa);
        free(x);
        free(y);
    }
}

#ifdef TEST_SIMD
/* The AVX-512 Q5_K and Q6_K kernels against the AVX2 ones, bit for bit:
 * they keep the AVX2 kernels' integer lanes and float order, which for
 * Q6_K are ggml's (the greedy ids of the llama.cpp references depend on
 * it).  Raw random blocks (every scale byte, random f16 d) and raw Q8_K. */
static void test_avx512_k_equals_avx2(void) {
    static const tport_type_id types[] = {TPORT_TYPE_Q5_K, TPORT_TYPE_Q6_K};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const tport_type_traits *t = tport_traits(types[k]);
        cpu_vec_dot_fn wide = CPUQ(avx512_kernel)(types[k]), avx2 = CPUQ(avx2_kquant_kernel)(types[k]);
        CHECK(t && wide && avx2 && wide != avx2, "type %u: no AVX-512 and AVX2 kernels", types[k]);
        if (!t || !wide || !avx2)
            continue;
        const size_t bx = t->info.block_bytes;
        uint8_t *x = malloc(8 * bx), *y = malloc(8 * 292);
        int mismatches = 0;
        for (int rep = 0; rep < 300; rep++) {
            const int nb = 1 + (int)(test_rng_next(&rng) % 8);
            for (size_t i = 0; i < (size_t)nb * bx; i++)
                x[i] = (uint8_t)(test_rng_next(&rng) >> 24);
            random_q8k(y, nb);
            float a = NAN, c = NAN;
            avx2(nb * 256, &a, x, y);
            wide(nb * 256, &c, x, y);
            if (!same_float(a, c) && mismatches++ < 3)
                CHECK(0, "%s avx512, %d blocks: %.9g, avx2 %.9g", t->info.name, nb, (double)c, (double)a);
        }
        CHECK(mismatches == 0, "%s avx512: %d of 300 differ from avx2", t->info.name, mismatches);
        printf("%s avx512 kernel equals avx2 bit for bit\n", t->info.name);
        free(x);
        free(y);
    }
}
#endif

/* The table types (MXFP4, IQ4_NL: 32-element blocks; IQ4_XS: 256) against
 * the scalar kernel on every length from 1 to 40 blocks (1 to 6
 * super-blocks), so that each SIMD kernel's main step runs 0 to 5 times
 * with every tail: raw random index bytes, MXFP4 exponents over the whole
 * range in use plus the subnormal scales (e = 0, 1), activations in
 * [-127, 127] with +-127 often.  Tolerance 1e-5 of sum |x y| of the
 * dequantized operands (the float order differs; integers are exact). */
static void test_lut_lengths(const char *isa) {
    static const tport_type_id types[] = {TPORT_TYPE_MXFP4, TPORT_TYPE_IQ4_NL, TPORT_TYPE_IQ4_XS};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const tport_type_traits *t = tport_traits(types[k]), *vt = t ? tport_traits(t->info.vec_dot_type) : NULL;
        cpu_vec_dot_fn scalar = cpu_vec_dot_scalar_for(types[k]), simd = cpu_vec_dot_for(types[k]);
        CHECK(t && vt && scalar && simd, "type %u: no kernel", types[k]);
        if (!t || !vt || !scalar || !simd || simd == scalar)
            continue;
        const int bs = (int)t->info.block_size, max_blocks = bs == 32 ? 40 : 6;
        const size_t bx = t->info.block_bytes, by = vt->info.block_bytes;
        const int per_y = bs / (int)vt->info.block_size; /* activation blocks per weight block */
        uint8_t *x = malloc((size_t)max_blocks * bx), *y = malloc((size_t)(max_blocks * per_y) * by);
        float *xf = malloc(sizeof(float) * (size_t)(max_blocks * bs)), *yf = malloc(sizeof(float) * (size_t)(max_blocks * bs));
        int bad = 0, bad4 = 0;
        cpu_vec_dot4_fn four = cpu_vec_dot4_for(types[k]);
        for (int rep = 0; rep < 3 * max_blocks; rep++) {
            const int nb = 1 + rep % max_blocks, n = nb * bs;
            const bool tiny = rep >= 2 * max_blocks; /* MXFP4: only subnormal-scale exponents */
            for (size_t i = 0; i < (size_t)nb * bx; i++)
                x[i] = (uint8_t)(test_rng_next(&rng) >> 24);
            for (int b = 0; b < nb; b++) {
                uint8_t *blk = x + (size_t)b * bx;
                const unsigned long long r = test_rng_next(&rng);
                if (types[k] == TPORT_TYPE_MXFP4) {
                    blk[0] = (uint8_t)(tiny ? r % 4 : r % 8 == 0 ? r % 2 : 96 + (r >> 8) % 64);
                } else { /* f16 d in [2^-10, 2^-4), either sign */
                    const uint16_t h = (uint16_t)(0x1400 + (r >> 8) % 0x1800) | (uint16_t)(r & 1) << 15;
                    blk[0] = (uint8_t)h;
                    blk[1] = (uint8_t)(h >> 8);
                }
            }
            for (int i = 0; i < n; i++) {
                const unsigned long long r = test_rng_next(&rng);
                yf[i] = r % 4 == 0 ? (r & 16 ? 1.0f : -1.0f) : (float)((int)((r >> 8) % 255) - 127) / 127.0f;
            }
            vt->from_float(yf, y, n);
            t->to_float(x, xf, n);
            vt->to_float(y, yf, n);
            double mag = 0;
            for (int i = 0; i < n; i++)
                mag += fabs((double)xf[i] * yf[i]);
            float a = NAN, c = NAN;
            scalar(n, &a, x, y);
            simd(n, &c, x, y);
            if (!(fabs((double)a - c) <= 1e-5 * mag + 1e-44) && bad++ < 3)
                CHECK(0, "%s %s, %d blocks: %.9g, scalar %.9g (sum|xy| %g)", t->info.name, isa, nb, (double)c,
                      (double)a, mag);
            if (four) { /* rows x and x one block on (one block shorter): each bit for bit the one-row kernel's */
                const int m = nb > 1 ? n - bs : n;
                const void *x1 = nb > 1 ? x + bx : x, *rows[4] = {x, x1, x1, x};
                float r4[4], r1[4];
                four(m, r4, rows, y);
                for (int r = 0; r < 4; r++) {
                    simd(m, &r1[r], rows[r], y);
                    if (!same_float(r4[r], r1[r]) && bad4++ < 3)
                        CHECK(0, "%s %s four rows, %d blocks, row %d: %.9g, one row %.9g", t->info.name, isa, nb,
                              r, (double)r4[r], (double)r1[r]);
                }
            }
        }
        CHECK(bad == 0, "%s %s: %d lengths differ from scalar", t->info.name, isa, bad);
        CHECK(bad4 == 0, "%s %s: %d four-row results differ from one-row ones", t->info.name, isa, bad4);
        if (four)
            printf("%s %s four-row kernel equals one-row bit for bit\n", t->info.name, isa);
        printf("%s %s kernel equals scalar on 1..%d blocks\n", t->info.name, isa, max_blocks);
        free(x);
        free(y);
        free(xf);
        free(yf);
    }
}

/* NVFP4, Q1_0 and Q2_0 (dot_nvfp4.c, dot_q1_0.c, dot_q2_0.c): raw random
 * blocks on every length from 1 to 12 blocks (each SIMD kernel's step of 2
 * or 4 blocks 0 to 6 times, with every tail), activations in [-127, 127]
 * with +-127 often (what Q8_0 quantizers write).
 * - The SIMD kernels against the scalar one bit for bit: they keep its
 *   eight float lanes and its operations (quant_kernels.h), so anything
 *   else is a bug; here with extreme f16 scales too (huge, subnormal,
 *   zero, negative; inf and NaN results must agree as well) and every
 *   UE4M3 byte (NaN 0x7f, the ignored sign bit).
 * - The scalar one against the exact dot product (double) of the
 *   dequantized operands, with sane scales: tolerance 1e-5 * sum |x y|
 *   (integer sums are exact; the products d_x d_y isum and at most 12
 *   blocks' float sums round, each by 2^-24 relative). */
/* bytes of memory ending where an inaccessible page starts (a kernel that
 * reads past its row faults), or NULL; *map, *len for munmap. */
static uint8_t *before_guard(size_t bytes, void **map, size_t *len) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (bytes + page - 1) / page * page;
    *len = body + page;
    *map = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (*map == MAP_FAILED || mprotect((uint8_t *)*map + body, page, PROT_NONE) != 0)
        return NULL;
    return (uint8_t *)*map + body - bytes;
}

static void test_own_file_types(const char *isa, int need_simd) {
    static const tport_type_id types[] = {TPORT_TYPE_NVFP4, TPORT_TYPE_Q1_0, TPORT_TYPE_Q2_0};
    static const uint16_t extremes[] = {0x7bff, 0xfbff, 0x0001, 0x8001, 0x0400, 0x3c00, 0x211f, 0x0000};
    const tport_type_traits *q8 = tport_traits(TPORT_TYPE_Q8_0);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const tport_type_traits *t = tport_traits(types[k]);
        cpu_vec_dot_fn scalar = cpu_vec_dot_scalar_for(types[k]), best = cpu_vec_dot_for(types[k]);
        CHECK(t && q8 && scalar && best && t->info.vec_dot_type == TPORT_TYPE_Q8_0, "type %u: no kernel", types[k]);
        if (!t || !q8 || !scalar || !best)
            continue;
        CHECK(!need_simd || best != scalar, "%s has no %s kernel", t->info.name, isa);
        cpu_vec_dot_fn simd[2] = {best != scalar ? best : NULL, NULL};
#ifdef TEST_SIMD
        { /* the AVX2 kernel too, in the AVX-512 copy */
            static const cpuq_type_kernels *const rows[] = {&CPUQ(nvfp4_kernels), &CPUQ(q1_0_kernels),
                                                            &CPUQ(q2_0_kernels)};
            CHECK(rows[k]->type == types[k] && rows[k]->scalar == scalar && rows[k]->avx2, "%s: row", t->info.name);
            if (rows[k]->avx2 != best)
                simd[1] = rows[k]->avx2;
        }
#endif
        const int bs = (int)t->info.block_size, per_y = bs / 32, max_blocks = 12;
        const size_t bx = t->info.block_bytes;
        /* each row and its activations end at a guard page */
        void *xmap = NULL, *ymap = NULL;
        size_t xlen = 0, ylen = 0;
        uint8_t *xend = before_guard((size_t)max_blocks * bx, &xmap, &xlen);
        uint8_t *yend = before_guard((size_t)(max_blocks * per_y) * BQ8_0, &ymap, &ylen);
        CHECK(xend && yend, "mmap");
        if (!xend || !yend)
            return;
        xend += (size_t)max_blocks * bx;
        yend += (size_t)(max_blocks * per_y) * BQ8_0;
        float *xf = malloc(sizeof(float) * (size_t)(max_blocks * bs)), *yf = malloc(sizeof(float) * (size_t)(max_blocks * bs));
        int bad = 0, far = 0, runs = 0, bad4 = 0;
        cpu_vec_dot4_fn four = cpu_vec_dot4_for(types[k]);
        for (int rep = 0; rep < 40 * max_blocks; rep++) {
            const int nb = 1 + rep % max_blocks, n = nb * bs;
            uint8_t *x = xend - (size_t)nb * bx, *y = yend - (size_t)(nb * per_y) * BQ8_0;
            const bool extreme = rep % 2 == 1;
            for (size_t i = 0; i < (size_t)nb * bx; i++) /* NVFP4: every scale byte */
                x[i] = (uint8_t)(test_rng_next(&rng) >> 24);
            for (int b = 0; b < nb && types[k] != TPORT_TYPE_NVFP4; b++) {
                const unsigned long long r = test_rng_next(&rng);
                const uint16_t h = extreme ? extremes[(r >> 8) % (sizeof extremes / sizeof extremes[0])]
                                           : (uint16_t)(0x1400 + (r >> 8) % 0x1800) | (uint16_t)(r & 1) << 15;
                x[(size_t)b * bx] = (uint8_t)h;
                x[(size_t)b * bx + 1] = (uint8_t)(h >> 8);
            }
            for (int b = 0; b < nb * per_y; b++) {
                uint8_t *yb = y + (size_t)b * BQ8_0;
                const unsigned long long r = test_rng_next(&rng);
                const uint16_t h = extreme && r % 3 ? extremes[(r >> 8) % (sizeof extremes / sizeof extremes[0])]
                                                    : (uint16_t)(0x1400 + (r >> 8) % 0x1800) | (uint16_t)(r & 1) << 15;
                yb[0] = (uint8_t)h;
                yb[1] = (uint8_t)(h >> 8);
                for (int j = 0; j < 32; j++) {
                    const unsigned long long v = test_rng_next(&rng);
                    yb[2 + j] = (uint8_t)(int8_t)(v % 4 == 0 ? (v & 16 ? 127 : -127) : (int)((v >> 8) % 255) - 127);
                }
            }
            float a = NAN;
            scalar(n, &a, x, y);
            for (int m = 0; m < 2; m++) {
                if (!simd[m])
                    continue;
                float c = NAN;
                simd[m](n, &c, x, y);
                if (!same_float(a, c) && bad++ < 3)
                    CHECK(0, "%s %s kernel %d, %d blocks%s: %.9g, scalar %.9g", t->info.name, isa, m, nb,
                          extreme ? " (extreme scales)" : "", (double)c, (double)a);
            }
            if (four) { /* rows x and x one block on (one block shorter): each bit for bit the one-row kernel's */
                const int m = nb > 1 ? n - bs : n;
                const void *x1 = nb > 1 ? x + bx : x, *rows4[4] = {x, x1, x1, x};
                float r4[4], r1[4];
                four(m, r4, rows4, y);
                for (int r = 0; r < 4; r++) {
                    best(m, &r1[r], rows4[r], y);
                    if (!same_float(r4[r], r1[r]) && bad4++ < 3)
                        CHECK(0, "%s %s four rows, %d blocks, row %d: %.9g, one row %.9g", t->info.name, isa, nb, r,
                              (double)r4[r], (double)r1[r]);
                }
            }
            if (extreme)
                continue;
            t->to_float(x, xf, n);
            q8->to_float(y, yf, n);
            double exact = 0, mag = 0;
            for (int i = 0; i < n; i++) {
                exact += (double)xf[i] * yf[i];
                mag += fabs((double)xf[i] * yf[i]);
            }
            runs++;
            if (!(fabs((double)a - exact) <= 1e-5 * mag + 1e-30) && far++ < 3)
                CHECK(0, "%s scalar, %d blocks: %.9g, exact %.9g (sum|xy| %g)", t->info.name, nb, (double)a, exact,
                      mag);
        }
        CHECK(bad == 0, "%s %s: %d results differ from scalar", t->info.name, isa, bad);
        CHECK(far == 0, "%s scalar: %d of %d off the exact dot", t->info.name, far, runs);
        CHECK(bad4 == 0, "%s %s: %d four-row results differ from one-row ones", t->info.name, isa, bad4);
        if (four)
            printf("%s %s four-row kernel equals one-row bit for bit\n", t->info.name, isa);
        printf("%s scalar kernel within 1e-5 of exact (%d lengths)%s%s%s\n", t->info.name, runs,
               simd[0] ? ", " : "", simd[0] ? isa : "", simd[0] ? (simd[1] ? " and avx2 equal it bit for bit" : " equals it bit for bit") : "");
        munmap(xmap, xlen);
        munmap(ymap, ylen);
        free(xf);
        free(yf);
    }
}

int main(void) {
    /* every current weight type has an AVX2 kernel; AVX-512 builds use them
     * too; SSE2 (the plain x86-64 build) has the four most used and the
     * Q8_K lattice and ternary types */
    static const tport_type_id all[] = {TPORT_TYPE_Q4_0, TPORT_TYPE_Q4_1, TPORT_TYPE_Q5_0, TPORT_TYPE_Q5_1,
                                        TPORT_TYPE_Q8_0, TPORT_TYPE_Q2_K, TPORT_TYPE_Q3_K, TPORT_TYPE_Q4_K,
                                        TPORT_TYPE_Q5_K, TPORT_TYPE_Q6_K, TPORT_TYPE_IQ4_NL, TPORT_TYPE_IQ4_XS,
                                        TPORT_TYPE_MXFP4, TPORT_TYPE_IQ2_XXS, TPORT_TYPE_IQ2_XS,
                                        TPORT_TYPE_IQ2_S, TPORT_TYPE_IQ3_XXS, TPORT_TYPE_IQ3_S, TPORT_TYPE_IQ1_S,
                                        TPORT_TYPE_IQ1_M, TPORT_TYPE_TQ1_0, TPORT_TYPE_TQ2_0,
                                        TPORT_TYPE_NVFP4, TPORT_TYPE_Q1_0, TPORT_TYPE_Q2_0};
    static const tport_type_id sse2[] = {TPORT_TYPE_Q4_0,   TPORT_TYPE_Q8_0,   TPORT_TYPE_Q4_K,  TPORT_TYPE_Q6_K,
                                         TPORT_TYPE_IQ2_XXS, TPORT_TYPE_IQ2_XS, TPORT_TYPE_IQ2_S,  TPORT_TYPE_IQ3_XXS,
                                         TPORT_TYPE_IQ3_S,  TPORT_TYPE_IQ1_S,  TPORT_TYPE_IQ1_M,  TPORT_TYPE_TQ1_0,
                                         TPORT_TYPE_TQ2_0};
#ifdef TEST_SIMD
    if (!test_simd_usable(TEST_SIMD))
        test_skip("test_quant_vec_dot_" TEST_SIMD, "this CPU lacks " TEST_SIMD);
    CHECK(!strcmp(cpu_vec_dot_isa(), TEST_SIMD), "compiled ISA %s", cpu_vec_dot_isa());
    test_scalar_and_best();
    test_simd_equals_scalar(TEST_SIMD, all, (int)(sizeof all / sizeof all[0]));
    test_exact_iq(TEST_SIMD, 1);
    test_lut_lengths(TEST_SIMD);
    test_own_file_types(TEST_SIMD, 1);
    if (!strcmp(TEST_SIMD, "avx512")) { /* the AVX-512 ones, not the AVX2 kernels they replace */
        test_avx512_k_equals_avx2();
        static const tport_type_id lut[] = {TPORT_TYPE_MXFP4, TPORT_TYPE_IQ4_NL, TPORT_TYPE_IQ4_XS};
        for (size_t k = 0; k < sizeof lut / sizeof lut[0]; k++)
            CHECK(cpu_vec_dot_for(lut[k]) == CPUQ(avx512_lut_kernel)(lut[k]) && cpu_vec_dot_for(lut[k]) != NULL,
                  "type %u: not the AVX-512 table kernel", lut[k]);
        static const tport_type_id own[] = {TPORT_TYPE_IQ2_XXS, TPORT_TYPE_IQ2_XS, TPORT_TYPE_IQ2_S,
                                            TPORT_TYPE_IQ3_XXS, TPORT_TYPE_IQ3_S,  TPORT_TYPE_IQ1_S,
                                            TPORT_TYPE_IQ1_M,   TPORT_TYPE_TQ1_0,  TPORT_TYPE_TQ2_0};
        for (size_t k = 0; k < sizeof own / sizeof own[0]; k++)
            CHECK(cpu_vec_dot_for(own[k]) == CPUQ(avx512_iq_kernel)(own[k]) &&
                      cpu_vec_dot_for(own[k]) != CPUQ(avx2_iq_kernel)(own[k]),
                  "type %u: not the AVX-512 kernel", own[k]);
        CHECK(cpu_vec_dot_for(TPORT_TYPE_NVFP4) == CPUQ(nvfp4_kernels).avx512 && CPUQ(nvfp4_kernels).avx512 &&
                  cpu_vec_dot_for(TPORT_TYPE_Q1_0) == CPUQ(q1_0_kernels).avx512 && CPUQ(q1_0_kernels).avx512 &&
                  cpu_vec_dot_for(TPORT_TYPE_Q2_0) == CPUQ(q2_0_kernels).avx512 && CPUQ(q2_0_kernels).avx512,
              "NVFP4, Q1_0, Q2_0: not the AVX-512 kernels");
        CHECK(cpu_vec_dot4_for(TPORT_TYPE_NVFP4) != NULL, "NVFP4: no four-row kernel");
    }
    (void)sse2;
    return test_finish("test_quant_vec_dot_" TEST_SIMD);
#else
    test_scalar_and_best();
    if (!strcmp(cpu_vec_dot_isa(), "sse2"))
        test_simd_equals_scalar("sse2", sse2, (int)(sizeof sse2 / sizeof sse2[0]));
    else
        (void)sse2;
    (void)all;
    test_exact_iq(cpu_vec_dot_isa(), 0);
    test_lut_lengths(cpu_vec_dot_isa());
    test_own_file_types(cpu_vec_dot_isa(), 0);
    return test_finish("test_quant_vec_dot");
#endif
}
