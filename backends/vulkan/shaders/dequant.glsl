// Element k of a row of src0 (binding 0) whose first byte is `row`, as f32,
// for the type chosen by TYPE_*.  Formulas: docs/formats.md section 3 (the
// same order of f32 operations as the reference dequantizers).  For F32 and
// F16 `elem_stride` is the element stride (nb[0], views may be transposed);
// quantized rows are whole adjacent blocks.
#if defined(TYPE_F32)
#define QK 1u
float deq(uint row, uint k, uint elem_stride) { return a_f32(row + k * elem_stride); }
#elif defined(TYPE_F16)
#define QK 1u
float deq(uint row, uint k, uint elem_stride) { return a_f16(row + k * elem_stride); }
#elif defined(TYPE_Q8_0)
// {f16 d; i8 qs[32]}, 34 bytes: y = qs[i] * d
#define QK 32u
float deq(uint row, uint k, uint elem_stride) {
    uint blk = row + (k >> 5) * 34u;
    return float(a_i8(blk + 2u + (k & 31u))) * a_f16(blk);
}
#elif defined(TYPE_Q4_0)
// {f16 d; u8 qs[16]}, 18 bytes, split nibbles: q[j] = qs[j] & 15,
// q[j+16] = qs[j] >> 4; y = (q - 8) * d
#define QK 32u
float deq(uint row, uint k, uint elem_stride) {
    uint blk = row + (k >> 5) * 18u;
    uint j = k & 31u;
    uint q = (a_u8(blk + 2u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u;
    return float(int(q) - 8) * a_f16(blk);
}
#elif defined(TYPE_Q4_K)
// {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}, 144 bytes per 256.
// Group g = j/64 of 64 elements, half h = (j/32)&1: sub-block s = 2g+h with
// a 6-bit scale and min; y = d*sc*q - dmin*mn.
#define QK 256u
float deq(uint row, uint k, uint elem_stride) {
    uint blk = row + (k >> 8) * 144u;
    uint j = k & 255u;
    uint s = j >> 5, l = j & 31u, g = j >> 6;
    uint sc, mn;
    if (s < 4u) {
        sc = a_u8(blk + 4u + s) & 63u;
        mn = a_u8(blk + 8u + s) & 63u;
    } else {
        sc = (a_u8(blk + 8u + s) & 15u) | ((a_u8(blk + s) >> 6) << 4);
        mn = (a_u8(blk + 8u + s) >> 4) | ((a_u8(blk + 4u + s) >> 6) << 4);
    }
    uint q = (a_u8(blk + 16u + 32u * g + l) >> ((s & 1u) * 4u)) & 15u;
    float d1 = a_f16(blk) * float(sc);
    float m1 = a_f16(blk + 2u) * float(mn);
    return d1 * float(q) - m1;
}
#elif defined(TYPE_Q6_K)
// {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}, 210 bytes per 256.
// Half n = j/128; within it quarter t = (j%128)/32, l = j%32:
// low 4 bits from ql[64n + l + 32(t&1)] (>> 4 for t >= 2), high 2 bits
// from qh[32n + l] >> 2t; scale scales[8n + l/16 + 2t]; y = (d*sc)*(q-32).
#define QK 256u
float deq(uint row, uint k, uint elem_stride) {
    uint blk = row + (k >> 8) * 210u;
    uint j = k & 255u;
    uint n = j >> 7, t = (j & 127u) >> 5, l = j & 31u;
    uint lo = (a_u8(blk + 64u * n + l + 32u * (t & 1u)) >> ((t >> 1) * 4u)) & 15u;
    uint hi = (a_u8(blk + 128u + 32u * n + l) >> (2u * t)) & 3u;
    int q = int(lo | (hi << 4)) - 32;
    float sc = float(a_i8(blk + 192u + 8u * n + (l >> 4) + 2u * t));
    return (a_f16(blk + 208u) * sc) * float(q);
}
#else
#error "define one TYPE_*"
#endif
