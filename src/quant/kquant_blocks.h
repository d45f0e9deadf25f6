/* The parts of the k-quant reference quantizers that every rule shares:
 * byte layouts, scale packing and unpacking, the final requantization with
 * the stored (rounded) scales, and the bit packing of the quants.  What
 * differs between today's rules (kquants.c) and the 2023 ones
 * (kquants_2023.c) is only the per-sub-block scale search that produces
 * the float scales[] and mins[] (and the first guess of L) handed in here. */
#ifndef TPORT_QUANT_KQUANT_BLOCKS_H
#define TPORT_QUANT_KQUANT_BLOCKS_H

#include <stdint.h>

/* Byte offsets inside each QK_K = 256 block. */
enum { Q2K_SCALES = 0, Q2K_QS = 16, Q2K_D = 80, Q2K_DMIN = 82, Q2K_BYTES = 84 };
enum { Q3K_HMASK = 0, Q3K_QS = 32, Q3K_SCALES = 96, Q3K_D = 108, Q3K_BYTES = 110 };
enum { Q4K_D = 0, Q4K_DMIN = 2, Q4K_SCALES = 4, Q4K_QS = 16, Q4K_BYTES = 144 };
enum { Q5K_D = 0, Q5K_DMIN = 2, Q5K_SCALES = 4, Q5K_QH = 16, Q5K_QS = 48, Q5K_BYTES = 176 };
enum { Q6K_QL = 0, Q6K_QH = 128, Q6K_SCALES = 192, Q6K_D = 208, Q6K_BYTES = 210 };
enum { Q8K_D = 0, Q8K_QS = 4, Q8K_BSUMS = 260, Q8K_BYTES = 292 };

/* Four 2-bit values (L[j+l], L[j+l+32], L[j+l+64], L[j+l+96]) per byte. */
void tport_kq_pack_2bit(uint8_t *qs, const uint8_t *L);

/* Sub-block j's 6-bit scale and min from the 12 packed bytes of Q4_K/Q5_K. */
void tport_kq_get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m);

/* Q2_K block y from the 16 sub-block scales and mins (mins as -min): 4-bit
 * scales and mins, d and dmin, then L requantized in [0, 3] and packed. */
void tport_kq_write_q2_K(uint8_t *y, const float *x, uint8_t *L, const float *scales, const float *mins);

/* Q4_K / Q5_K block y from the 8 sub-block scales and mins: 6-bit scales
 * and mins, d and dmin, then L requantized in [0, 15] or [0, 31] and
 * packed. */
void tport_kq_write_q4_K(uint8_t *y, const float *x, uint8_t *L, const float *scales, const float *mins);
void tport_kq_write_q5_K(uint8_t *y, const float *x, uint8_t *L, const float *scales, const float *mins);

/* Q6_K block y from the 16 sub-block scales and the one of them with the
 * largest magnitude: 8-bit scales, d, then L requantized in [0, 63] and
 * packed.  A zero max_scale gives what upstream's 2023 code gave (d = -0,
 * scales 0); today's rule writes a zero block before getting here. */
void tport_kq_write_q6_K(uint8_t *y, const float *x, int8_t *L, const float *scales, float max_scale);

/* Q8_K rows with iscale = -nmax / max (today 127, in 2023 128). */
void tport_kq_quant_q8_K(const float *x, uint8_t *y, int64_t n, float nmax);

#endif
