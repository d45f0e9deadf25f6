/* Whether this CPU can run the kernels a SIMD build of a quant test was
 * compiled for (TEST_SIMD: "avx2", else the AVX-512 VNNI set).  (F16C,
 * also in the AVX2 flags, comes with every AVX2 CPU; clang's
 * __builtin_cpu_supports does not know its name.) */
#ifndef TPORT_TEST_SIMD_USABLE_H
#define TPORT_TEST_SIMD_USABLE_H

#include <string.h>

static inline int test_simd_usable(const char *simd) {
    __builtin_cpu_init();
    if (!strcmp(simd, "avx2"))
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
}

#endif
