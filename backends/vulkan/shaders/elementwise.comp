#version 450
// One invocation per destination element.  Words from 64: op, scale,
// source type, destination type (0 = F32, 1 = F16), element count.
//   op 0 add, 1 mul (src1 repeats over dst), 2 swiglu, 3 scale, 4 silu,
//   5 gelu (tanh approximation), 6 copy/convert (the source is read in
//   its own shape at the same linear index: reshaping copies).
#include "common.glsl"
layout(local_size_x = 256) in;

float silu(float x) { return x / (1.0 + exp(-x)); }
float gelu(float x) {
    const float sqrt_2_over_pi = 0.79788456080286535588;
    float t = sqrt_2_over_pi * x * (1.0 + 0.044715 * x * x);
    return 0.5 * x * (1.0 + tanh(clamp(t, -15.0, 15.0)));
}

void main() {
    uint idx = flat_id(256u);
    if (idx >= P(68))
        return;
    uint op = P(64);
    uvec4 c = unravel(3u, idx);
    uint dst = addr(3u, c.x, c.y, c.z, c.w);
    if (op == 6u) {
        uvec4 s = unravel(0u, idx);
        uint src = addr(0u, s.x, s.y, s.z, s.w);
        float v = P(66) == 1u ? a_f16(src) : a_f32(src);
        if (P(67) == 1u)
            d_put_f16(dst, v);
        else
            d_put_f32(dst, v);
        return;
    }
    float x = a_f32(addr(0u, c.x, c.y, c.z, c.w));
    float y;
    if (op <= 1u) {
        uint b = addr(1u, c.x % NE(1, 0), c.y % NE(1, 1), c.z % NE(1, 2), c.w % NE(1, 3));
        y = op == 0u ? x + b_f32(b) : x * b_f32(b);
    } else if (op == 2u) {
        y = silu(x) * b_f32(addr(1u, c.x, c.y, c.z, c.w));
    } else if (op == 3u) {
        y = x * PF(65);
    } else if (op == 4u) {
        y = silu(x);
    } else {
        y = gelu(x);
    }
    d_put_f32(dst, y);
}
