#version 450
// One workgroup per row of the destination.  Words from 64: op (0 rms_norm,
// 1 norm, 2 soft_max), eps or scale, has mask.  The soft_max mask (src1) row
// is (i1, i2 % ne2, i3 % ne3) as in the CPU backend.
// USE_F64 (devices with shaderFloat64): sums in double as the CPU backend
// takes them, so the f32 scale is the CPU's (a one-ulp difference there
// flips roundings when the result is quantized for the next product).
#include "common.glsl"
#ifdef USE_F64
#define ACC double
#else
#define ACC float
#endif
#define WG 128u
layout(local_size_x = 128) in;

shared ACC red[WG];

ACC reduce_sum(ACC v) {
    uint t = gl_LocalInvocationID.x;
    red[t] = v;
    barrier();
    [[unroll]] for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s)
            red[t] += red[t + s];
        barrier();
    }
    ACC r = red[0];
    barrier();
    return r;
}

float reduce_max(float v) {
    uint t = gl_LocalInvocationID.x;
    red[t] = ACC(v);
    barrier();
    [[unroll]] for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s)
            red[t] = max(red[t], red[t + s]);
        barrier();
    }
    float r = float(red[0]);
    barrier();
    return r;
}

void main() {
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint n = NE(3, 0), n1 = NE(3, 1), n2 = NE(3, 2), n3 = NE(3, 3);
    if (row >= n1 * n2 * n3)
        return; // uniform per workgroup
    uint i1 = row % n1, i2 = (row / n1) % n2, i3 = row / (n1 * n2);
    uint t = gl_LocalInvocationID.x;
    uint op = P(64);
    float p = PF(65);
    uint x0 = addr(0u, 0u, i1, i2, i3), xs = NB(0, 0);
    uint y0 = addr(3u, 0u, i1, i2, i3), ys = NB(3, 0);
    if (op == 0u) {
        ACC s = ACC(0.0);
        for (uint i = t; i < n; i += WG) {
            ACC x = ACC(a_f32(x0 + i * xs));
            s += x * x;
        }
        float scale = float(ACC(1.0) / sqrt(reduce_sum(s) / ACC(n) + ACC(p)));
        for (uint i = t; i < n; i += WG)
            d_put_f32(y0 + i * ys, a_f32(x0 + i * xs) * scale);
    } else if (op == 1u) {
        ACC s = ACC(0.0);
        for (uint i = t; i < n; i += WG)
            s += ACC(a_f32(x0 + i * xs));
        float mean = float(reduce_sum(s) / ACC(n));
        ACC v = ACC(0.0);
        for (uint i = t; i < n; i += WG) {
            ACC d = ACC(a_f32(x0 + i * xs) - mean);
            v += d * d;
        }
        float scale = float(ACC(1.0) / sqrt(reduce_sum(v) / ACC(n) + ACC(p)));
        for (uint i = t; i < n; i += WG)
            d_put_f32(y0 + i * ys, (a_f32(x0 + i * xs) - mean) * scale);
    } else {
        bool has_mask = P(66) != 0u;
        uint m0 = has_mask ? addr(1u, 0u, i1, i2 % NE(1, 2), i3 % NE(1, 3)) : 0u, ms = NB(1, 0);
        float mx = uintBitsToFloat(0xff800000u); // -inf
        for (uint i = t; i < n; i += WG) {
            float v = a_f32(x0 + i * xs) * p + (has_mask ? b_f32(m0 + i * ms) : 0.0);
            mx = max(mx, v);
        }
        mx = reduce_max(mx);
        if (isinf(mx) && mx < 0.0) {
            for (uint i = t; i < n; i += WG)
                d_put_f32(y0 + i * ys, 0.0);
            return;
        }
        ACC s = ACC(0.0);
        for (uint i = t; i < n; i += WG) {
            float v = a_f32(x0 + i * xs) * p + (has_mask ? b_f32(m0 + i * ms) : 0.0);
            float e = (isinf(v) && v < 0.0) ? 0.0 : exp(v - mx);
            d_put_f32(y0 + i * ys, e);
            s += ACC(e);
        }
        float inv = float(ACC(1.0) / reduce_sum(s));
        // each invocation rescales only the elements it wrote itself
        for (uint i = t; i < n; i += WG)
            d_put_f32(y0 + i * ys, d_f32(y0 + i * ys) * inv);
    }
}
