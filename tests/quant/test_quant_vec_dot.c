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
 * this CPU has the instruction set, else the test says "skipped". */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "cpu_quant.h"
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
    /* every current quantized weight type but NVFP4, Q1_0 and Q2_0 has a
     * kernel (q8_1/q8_K are activation types and have none) */
    CHECK(with_kernel >= 13 + 9 + 9, "only %d types have kernels", with_kernel);
    printf("kernels checked against exact dot products: %d types (best ISA: %s)\n", with_kernel,
           cpu_vec_dot_isa());
}

#ifdef TEST_SIMD
/* (F16C, also in the AVX2 flags, comes with every AVX2 CPU; clang's
 * __builtin_cpu_supports does not know its name.) */
static int cpu_has_simd(void) {
    __builtin_cpu_init();
    if (!strcmp(TEST_SIMD, "avx2"))
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
}
#endif

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

int main(void) {
    /* every current weight type has an AVX2 kernel; AVX-512 builds use them
     * too; SSE2 (the plain x86-64 build) has the four most used */
    static const tport_type_id all[] = {TPORT_TYPE_Q4_0, TPORT_TYPE_Q4_1, TPORT_TYPE_Q5_0, TPORT_TYPE_Q5_1,
                                        TPORT_TYPE_Q8_0, TPORT_TYPE_Q2_K, TPORT_TYPE_Q3_K, TPORT_TYPE_Q4_K,
                                        TPORT_TYPE_Q5_K, TPORT_TYPE_Q6_K, TPORT_TYPE_IQ4_NL, TPORT_TYPE_IQ4_XS,
                                        TPORT_TYPE_MXFP4};
    static const tport_type_id sse2[] = {TPORT_TYPE_Q4_0, TPORT_TYPE_Q8_0, TPORT_TYPE_Q4_K, TPORT_TYPE_Q6_K};
#ifdef TEST_SIMD
    if (!cpu_has_simd())
        test_skip("test_quant_vec_dot_" TEST_SIMD, "this CPU lacks " TEST_SIMD);
    CHECK(!strcmp(cpu_vec_dot_isa(), TEST_SIMD), "compiled ISA %s", cpu_vec_dot_isa());
    test_scalar_and_best();
    test_simd_equals_scalar(TEST_SIMD, all, (int)(sizeof all / sizeof all[0]));
    (void)sse2;
    return test_finish("test_quant_vec_dot_" TEST_SIMD);
#else
    test_scalar_and_best();
    if (!strcmp(cpu_vec_dot_isa(), "sse2"))
        test_simd_equals_scalar("sse2", sse2, (int)(sizeof sse2 / sizeof sse2[0]));
    else
        (void)sse2;
    (void)all;
    return test_finish("test_quant_vec_dot");
#endif
}
