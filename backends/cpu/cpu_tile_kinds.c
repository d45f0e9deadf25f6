/* The table of tiled kernels (cpu_internal.h, cpu_tile_kind): a new tile
 * kernel is a row here, and both products that take tiles (mul_mat,
 * cpu_ops_mul_mat.c, and mul_mat_id, cpu_mul_mat_id.c) use it with no edit
 * of their own. */
#include "cpu_internal.h"

static const cpu_tile_kind kinds[] = {
    {TPORT_TYPE_Q8_0, 3, cpu_q8tile_available, cpu_q8tile_scratch, cpu_q8tile_unpack, cpu_q8tile_dot},
    /* Q4_1, Q5_1: the same tiles against Q8_1 columns */
    {TPORT_TYPE_Q8_1, 3, cpu_q8tile_available, cpu_q8tile_scratch, cpu_q8tile_unpack, cpu_q8tile_dot},
    {TPORT_TYPE_Q8_K, 6, cpu_kqtile_available, cpu_kqtile_scratch, cpu_kqtile_unpack, cpu_kqtile_dot},
    /* the lattice row kernels look a grid up per column: tiles pay early
     * (an estimate, not profiled) */
    {TPORT_TYPE_Q8_K, 3, cpu_iqtile_available, cpu_iqtile_scratch, cpu_iqtile_unpack, cpu_iqtile_dot},
};

const cpu_tile_kind *cpu_tile_kind_for(tport_type_id type, tport_type_id vec_dot_type) {
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].vec_dot_type == vec_dot_type && kinds[i].available(type))
            return &kinds[i];
    return NULL;
}

/* The wide kinds (cpu_internal.h, cpu_tile_wide), tried before the rows
 * above by products with enough columns. */
static const cpu_tile_wide wide[] = {
#if CPU_AMX
    /* AMX-INT8 tiles, 32 rows x 32 columns (cpu_mul_mat_amx_q4.c);
     * min_cols 8: on a gpt-oss-20b-shaped MXFP4_MOE prompt of 128 tokens
     * (experts of some 16 tokens) 4, 8 and 12 ran alike, 16 about 6%
     * slower (user time, runs alternated) */
    {{TPORT_TYPE_Q8_0, 8, cpu_amx_q4_available, cpu_amx_q4_scratch, cpu_amx_q4_unpack, cpu_amx_q4_dot},
     CPU_AMX_Q4_ROWS, CPU_AMX_Q4_COLS, cpu_amx_q4_begin, cpu_amx_q4_end},
#endif
    {{0, 0, NULL, NULL, NULL, NULL}, 0, 0, NULL, NULL}, /* none: keeps the table non-empty */
};

const cpu_tile_wide *cpu_tile_kind_wide(tport_type_id type, tport_type_id vec_dot_type) {
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        if (wide[i].kind.available && wide[i].kind.vec_dot_type == vec_dot_type && wide[i].kind.available(type))
            return &wide[i];
    return NULL;
}
