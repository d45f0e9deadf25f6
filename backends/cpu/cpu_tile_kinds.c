/* The table of tiled kernels (cpu_internal.h, cpu_tile_kind): a new tile
 * kernel is a row here, and both products that take tiles (mul_mat,
 * cpu_ops_mul_mat.c, and mul_mat_id, cpu_mul_mat_id.c) use it with no edit
 * of their own. */
#include "cpu_internal.h"

#define VNNI CPU_Q8TILE_ROWS, 4, 0, NULL, NULL, 0 /* 8 rows, 4 columns a dot, any batch */

static const cpu_tile_kind kinds[] = {
#if CPU_AMX
    /* K-quant batches of CPU_AMX_KQ_MIN_COLS columns and more on AMX
     * tiles (where the CPU has them: available) */
    {TPORT_TYPE_Q8_K, CPU_AMX_KQ_MIN_COLS, cpu_amx_kq_available, cpu_amx_kq_scratch, cpu_amx_kq_unpack,
     cpu_amx_kq_dot, CPU_AMX_KQ_ROWS, CPU_AMX_KQ_COLS, CPU_AMX_KQ_MIN_COLS, cpu_amx_kq_begin, cpu_amx_kq_end, 0},
    /* the 32-element types x Q8_0 (MXFP4, IQ4_NL, Q4_0, Q5_0, Q8_0) on
     * AMX tiles from 8 columns: on a gpt-oss-shaped prompt, whose experts
     * get some 16 tokens, thresholds of 4 to 12 ran alike and 16 was
     * slower (RESULTS run 36) */
    {TPORT_TYPE_Q8_0, 8, cpu_amx_q4_available, cpu_amx_q4_scratch, cpu_amx_q4_unpack, cpu_amx_q4_dot,
     CPU_AMX_Q4_ROWS, CPU_AMX_Q4_COLS, 8, cpu_amx_q4_begin, cpu_amx_q4_end, 0},
#endif
    {TPORT_TYPE_Q8_0, 3, cpu_q8tile_available, cpu_q8tile_scratch, cpu_q8tile_unpack, cpu_q8tile_dot, VNNI},
    /* Q4_1, Q5_1: the same tiles against Q8_1 columns */
    {TPORT_TYPE_Q8_1, 3, cpu_q8tile_available, cpu_q8tile_scratch, cpu_q8tile_unpack, cpu_q8tile_dot, VNNI},
    /* Q6_K with no unpacked tile, 8 columns a dot (AVX-512 VNNI): nothing
     * to unpack, so in mul_mat it beats the row kernel from 2 columns
     * (profiles of 2 and 3 sequences; at 1 it only ties) */
    {TPORT_TYPE_Q8_K, 6, cpu_q6tile_available, cpu_q6tile_scratch, cpu_q6tile_unpack, cpu_q6tile_dot,
     CPU_Q8TILE_ROWS, 8, 0, NULL, NULL, 2},
    {TPORT_TYPE_Q8_K, 6, cpu_kqtile_available, cpu_kqtile_scratch, cpu_kqtile_unpack, cpu_kqtile_dot, VNNI},
    /* the lattice row kernels look a grid up per column: tiles pay early
     * (an estimate, not profiled) */
    {TPORT_TYPE_Q8_K, 3, cpu_iqtile_available, cpu_iqtile_scratch, cpu_iqtile_unpack, cpu_iqtile_dot, VNNI},
};

const cpu_tile_kind *cpu_tile_kind_for(tport_type_id type, tport_type_id vec_dot_type, int64_t cols) {
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].vec_dot_type == vec_dot_type && cols >= kinds[i].min_batch && kinds[i].available(type))
            return &kinds[i];
    return NULL;
}

