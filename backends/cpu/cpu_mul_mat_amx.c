/* The opt-in bf16 batches (cpu_mul_mat_dense.c) on Intel AMX tiles.
 *
 * One TDPBF16PS multiplies a 16 x 32 bf16 tile by a 32 x 16 one into 16 x
 * 16 f32 sums: 8192 multiply-adds, where vdpbf16ps does 32.  On the Xeon
 * of RESULTS run 28 one core ran it from registers at more than twice
 * the rate vdpbf16ps reached on the Zen 5 of run 26, and far above
 * vdpbf16ps on the Xeon itself.
 *
 * The operands are already in the shapes the tiles want:
 * - the weights' bf16 panels (pack_block_bf16) hold, for each pair of k,
 *   one 32-bit word per row: 16 pairs of 16 rows are a B tile (rows of 64
 *   bytes, the panel's stride 128 bytes);
 * - b's rows, rounded to bf16 once per op, are an A tile as they lie: 16
 *   columns (tokens) of 32 k, stride the packed row;
 * - a C tile is 16 tokens x 16 consecutive weight rows, which is the
 *   output's layout (each token's row of results, stride ldc).
 * Two A and two B tiles feed four C tiles (32 tokens x 32 rows) per step
 * of 32 k.  A group of fewer than 32 tokens is copied, zero-padded, into
 * scratch, and a partial tile of the output goes through scratch too.
 *
 * AMX's sums are f32 with bf16 products, as vdpbf16ps's; its inputs'
 * denormals count as zero (bf16 has f32's exponent range, so no f16
 * weight is one).  Tiles are per-thread state: each call loads the
 * configuration and releases the tiles at the end, so a pool thread that
 * ran no AMX work keeps none, and the kernel saves no tile data for it. */
#include <string.h>

#include "cpu_internal.h"

#if CPU_AMX
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f")))
#define ARCH_REQ_XCOMP_PERM 0x1023 /* <asm/prctl.h>, not in every libc's headers */
#define XFEATURE_XTILEDATA 18

bool cpu_amx_usable(unsigned edx_bit) {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
        return false;
    if (!(edx & (1u << 24)) || !(edx & (1u << edx_bit))) /* AMX-TILE, and the one asked for */
        return false;
    /* Linux hands out the tile data state only to processes that ask */
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

bool cpu_amx_init(void) { return cpu_amx_usable(22); /* AMX-BF16 */ }

/* Palette 1, all eight tiles 16 rows of 64 bytes. */

/* GROUP is both the tokens of a step and the rows of a weight panel (PANEL
 * in cpu_mul_mat_dense.c, which asserts it) */
enum { T = 16 /* rows of a tile */, GROUP = 32, TAIL_C = GROUP * GROUP };

/* The A operand of a group of tokens: n (< GROUP) bf16 rows of kc, from b
 * (stride ldb) into dst (stride kc * 2), the rest zero. */
static void pad_tokens(const uint8_t *b, size_t ldb, int n, int64_t kc, uint8_t *dst) {
    for (int m = 0; m < GROUP; m++) {
        if (m < n)
            memcpy(dst + (size_t)m * (size_t)kc * 2, b + (size_t)m * ldb, (size_t)kc * 2);
        else
            memset(dst + (size_t)m * (size_t)kc * 2, 0, (size_t)kc * 2);
    }
}

/* Four C tiles over a 32 x 32 block: tokens a (stride as) against the
 * panel p (pairs of k, 32 rows, kc / 2 of them) into c (stride cs), added
 * to what c holds when add. */
AMX_TARGET static void block32(const uint8_t *a, size_t as, const uint32_t *p, int64_t kc, float *c, size_t cs,
                               bool add) {
    if (add) {
        _tile_loadd(0, c, cs);
        _tile_loadd(1, c + T, cs);
        _tile_loadd(2, (uint8_t *)c + T * cs, cs);
        _tile_loadd(3, (uint8_t *)c + T * cs + T * sizeof(float), cs);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    for (int64_t pair = 0; pair < kc / 2; pair += T) {
        _tile_loadd(4, a + pair * 4, as);
        _tile_loadd(5, a + T * as + pair * 4, as);
        _tile_loadd(6, p + pair * GROUP, GROUP * 4);
        _tile_loadd(7, p + pair * GROUP + T, GROUP * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, cs);
    _tile_stored(1, c + T, cs);
    _tile_stored(2, (uint8_t *)c + T * cs, cs);
    _tile_stored(3, (uint8_t *)c + T * cs + T * sizeof(float), cs);
}

size_t cpu_amx_scratch(int64_t kc_max) {
    return (size_t)GROUP * (size_t)kc_max * 2 + TAIL_C * sizeof(float) + 64;
}

AMX_TARGET void cpu_amx_bf16_block(const uint32_t *panels, int rows, int64_t kc, const uint8_t *b, size_t ldb,
                                   int64_t M, uint8_t *c, size_t ldc, bool add, void *scratch) {
    cpu_amx_tile_config cfg = {.palette = 1};
    for (int i = 0; i < 8; i++)
        cfg.colsb[i] = 64, cfg.rows[i] = T;
    _tile_loadconfig(&cfg);
    uint8_t *tail_a = (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    float *tail_c = (float *)(void *)(tail_a + (size_t)GROUP * (size_t)kc * 2);
    int npanels = (rows + GROUP - 1) / GROUP;
    for (int64_t m0 = 0; m0 < M; m0 += GROUP) {
        int nm = (int)(M - m0 < GROUP ? M - m0 : GROUP);
        const uint8_t *a = b + (size_t)m0 * ldb;
        size_t as = ldb;
        if (nm < GROUP) {
            pad_tokens(a, ldb, nm, kc, tail_a);
            a = tail_a, as = (size_t)kc * 2;
        }
        for (int pnl = 0; pnl < npanels; pnl++) {
            const uint32_t *p = panels + (size_t)pnl * (size_t)(kc / 2) * GROUP;
            int nr = rows - pnl * GROUP < GROUP ? rows - pnl * GROUP : GROUP;
            float *out = (float *)(void *)(c + (size_t)m0 * ldc) + pnl * GROUP;
            if (nm == GROUP && nr == GROUP) {
                block32(a, as, p, kc, out, ldc, add);
                continue;
            }
            /* a partial block: through scratch, only the valid part kept */
            for (int m = 0; m < GROUP; m++)
                for (int r = 0; r < GROUP; r++)
                    tail_c[m * GROUP + r] =
                        add && m < nm && r < nr ? ((const float *)(const void *)((const uint8_t *)out + m * ldc))[r] : 0;
            block32(a, as, p, kc, tail_c, GROUP * sizeof(float), add);
            for (int m = 0; m < nm; m++)
                memcpy((uint8_t *)out + m * ldc, tail_c + m * GROUP, (size_t)nr * sizeof(float));
        }
    }
    _tile_release();
}
#endif
