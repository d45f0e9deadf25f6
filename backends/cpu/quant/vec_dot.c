/* Picks the quantized dot-product kernel for a weight type: the widest
 * instruction set this copy was compiled for that has one (AVX-512, AVX2,
 * SSE2), else scalar. */
#include "quant_kernels.h"

#include <stddef.h>

uintptr_t CPUQ(stream_ahead) = 2048;

/* The types whose file holds all their kernels: a row each. */
static const cpuq_type_kernels *own_file_row(tport_type_id type) {
    static const cpuq_type_kernels *const rows[] = {&CPUQ(nvfp4_kernels), &CPUQ(q1_0_kernels),
                                                    &CPUQ(q2_0_kernels)};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i]->type == type)
            return rows[i];
    return NULL;
}

cpu_vec_dot_fn CPUQ(scalar_kernel)(tport_type_id type) {
    const cpuq_type_kernels *row = own_file_row(type);
    if (row)
        return row->scalar;
    cpu_vec_dot_fn fn = CPUQ(scalar_legacy_kernel)(type);
    if (!fn)
        fn = CPUQ(scalar_kquant_kernel)(type);
    return fn ? fn : CPUQ(scalar_iq_kernel)(type);
}

static cpu_vec_dot_fn avx2_kernel(tport_type_id type) {
    cpu_vec_dot_fn fn = CPUQ(avx2_legacy_kernel)(type);
    if (!fn)
        fn = CPUQ(avx2_kquant_kernel)(type);
    return fn ? fn : CPUQ(avx2_iq_kernel)(type);
}

cpu_vec_dot_fn cpu_vec_dot_scalar_for(tport_type_id type) {
    return CPUQ(scalar_kernel)(type);
}

cpu_vec_dot_fn cpu_vec_dot_for(tport_type_id type) {
    const cpuq_type_kernels *row = own_file_row(type);
    if (row)
        return row->avx512 ? row->avx512 : row->avx2 ? row->avx2 : row->scalar;
    cpu_vec_dot_fn fn = CPUQ(avx512_lut_kernel)(type);
    if (!fn)
        fn = CPUQ(avx512_kernel)(type);
    if (!fn)
        fn = CPUQ(avx512_iq_kernel)(type);
    if (!fn)
        fn = avx2_kernel(type);
    if (!fn)
        fn = CPUQ(sse2_kernel)(type);
    if (!fn)
        fn = CPUQ(sse2_iq_kernel)(type);
    return fn ? fn : CPUQ(scalar_kernel)(type);
}

cpu_vec_dot4_fn cpu_vec_dot4_for(tport_type_id type) {
    const cpuq_type_kernels *row = own_file_row(type);
    if (row) /* only where cpu_vec_dot_for picks its one-row twin */
        return row->avx512 ? row->avx512_4 : NULL;
    /* only where cpu_vec_dot_for picks the same ISA's LUT kernel */
    return CPUQ(avx512_lut_kernel)(type) ? CPUQ(avx512_lut_rows4)(type) : NULL;
}

const char *cpu_vec_dot_isa(void) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX2__) && defined(__FMA__)
    return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
    return "avx2";
#elif defined(__SSE2__)
    return "sse2";
#else
    return "scalar";
#endif
}
