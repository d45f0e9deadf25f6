#version 450
// Rounds mul_mat activations (src1, binding 1) the way the CPU backend
// quantizes them for quantized weights, and writes the decoded values as a
// contiguous F32 tensor (binding 3), so a product on the device matches the
// CPU's up to float rounding instead of up to 8-bit rounding (greedy ids
// then agree).  One invocation per block.  Words from 64: mode, blocks.
//   mode 0, Q8_0 (32 per block; llama.cpp's x86 activation quantizer):
//     d = f16(amax / 127), q = clamp(roundEven(x * (127 / amax)), -128, 127)
//   mode 1, Q8_K (256 per block; the reference quantizer): max = the value
//     of largest |x| (first wins), s = -127 / max,
//     q = min(127, roundEven(s * x)), d = 1 / s
//   y = q * d  (the dot products' d_w * d_x * sum(q_w * q_x) up to rounding)
#include "common.glsl"
layout(local_size_x = 64) in;

void main() {
    uint blk = flat_id(64u);
    if (blk >= P(65))
        return;
    bool q8k = P(64) == 1u;
    uint qk = q8k ? 256u : 32u;
    uint K = NE(1, 0), nb = K / qk;
    uint row = blk / nb, kb = blk % nb;
    uint j = row % NE(1, 1), i2 = (row / NE(1, 1)) % NE(1, 2), i3 = row / (NE(1, 1) * NE(1, 2));
    uint src = addr(1u, kb * qk, j, i2, i3), step = NB(1, 0);
    uint dst = OFF(3) + (row * K + kb * qk) * 4u;
    float amax = 0.0, mx = 0.0;
    for (uint i = 0u; i < qk; i++) {
        float x = b_f32(src + i * step);
        if (abs(x) > amax) {
            amax = abs(x);
            mx = x;
        }
    }
    if (amax == 0.0) {
        for (uint i = 0u; i < qk; i++)
            d_put_f32(dst + i * 4u, 0.0);
        return;
    }
    if (q8k) {
        float s = -127.0 / mx;
        float d = 1.0 / s;
        for (uint i = 0u; i < qk; i++) {
            float q = min(127.0, roundEven(s * b_f32(src + i * step)));
            d_put_f32(dst + i * 4u, q * d);
        }
    } else {
        float d = unpackHalf2x16(packHalf2x16(vec2(amax / 127.0, 0.0))).x;
        float id = 127.0 / amax;
        for (uint i = 0u; i < qk; i++) {
            float q = clamp(roundEven(b_f32(src + i * step) * id), -128.0, 127.0);
            d_put_f32(dst + i * 4u, q * d);
        }
    }
}
