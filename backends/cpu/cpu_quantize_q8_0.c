/* Activations to Q8_0 {f16 d; i8 q[32]} for the quantized mul_mat paths,
 * byte for byte what the host's reference quantizer writes (ggml's
 * quantize_row_q8_0_ref: d = max|x| / 127, q = roundf(x / d), d stored as
 * f16 rounded to nearest even), but vectorized: through the host's table
 * it cost as much as a tenth of prompt processing.  roundf rounds halves
 * away from zero, unlike the vector unit's round-to-nearest-even, so it is
 * done by hand: truncate, then step away from zero when the dropped
 * fraction (exact in f32) is at least one half. */
#include <string.h>

#include "cpu_internal.h"

#if defined(__AVX512F__) && defined(__F16C__)
#include <immintrin.h>

bool cpu_quantize_q8_0_available(void) { return true; }

static __m512 round_half_away(__m512 v) {
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(v, t);
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 sign_one = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u)), _mm512_castps_si512(one)));
    const __mmask16 away = _mm512_cmp_ps_mask(_mm512_abs_ps(f), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    return _mm512_mask_add_ps(t, away, t, sign_one);
}

void cpu_quantize_q8_0(const float *x, uint8_t *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 34) {
        const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
        const float d = amax / 127;
        const float id = d ? 1.0f / d : 0.0f;
        const uint16_t h = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        memcpy(y, &h, sizeof h);
        const __m512 vid = _mm512_set1_ps(id);
        const __m512i q0 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(v0, vid)));
        const __m512i q1 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(v1, vid)));
        _mm_storeu_si128((__m128i *)(void *)(y + 2), _mm512_cvtepi32_epi8(q0));
        _mm_storeu_si128((__m128i *)(void *)(y + 18), _mm512_cvtepi32_epi8(q1));
    }
}

#else

bool cpu_quantize_q8_0_available(void) { return false; }

void cpu_quantize_q8_0(const float *x, uint8_t *y, int64_t n) {
    (void)x, (void)y, (void)n;
}
#endif
