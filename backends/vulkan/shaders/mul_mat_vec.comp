#version 450
// Matrix-vector product for few tokens: one workgroup per output element
// dst[i, j, i2, i3] = sum_k src0[k, i, i2/r2, i3/r3] * src1[k, j, i2, i3].
// Workgroup (x + y*65535 -> row i of this chunk, z -> j + ne1*(i2 + ne2*i3)).
// Words from 64: first row of the chunk, rows in the chunk, r2, r3.
#include "common.glsl"
#include "dequant.glsl"
#define WG 64u
layout(local_size_x = 64) in;

shared float red[WG];

void main() {
    uint r = gl_WorkGroupID.y * 65535u + gl_WorkGroupID.x;
    if (r >= P(65))
        return; // uniform per workgroup
    uint i = P(64) + r;
    uint n1 = NE(3, 1), n2 = NE(3, 2);
    uint z = gl_WorkGroupID.z;
    uint j = z % n1, i2 = (z / n1) % n2, i3 = z / (n1 * n2);
    uint K = NE(0, 0);
    uint arow = OFF(0) + r * NB(0, 1) + (i2 / P(66)) * NB(0, 2) + (i3 / P(67)) * NB(0, 3);
    uint as = NB(0, 0);
    uint b0 = addr(1u, 0u, j, i2, i3), bs = NB(1, 0);
    uint t = gl_LocalInvocationID.x;
    float s = 0.0;
    for (uint k = t; k < K; k += WG)
        s += deq(arow, k, as) * b_f32(b0 + k * bs);
    red[t] = s;
    barrier();
    [[unroll]] for (uint h = WG / 2u; h > 0u; h >>= 1) {
        if (t < h)
            red[t] += red[t + h];
        barrier();
    }
    if (t == 0u)
        d_put_f32(addr(3u, i, j, i2, i3), red[0]);
}
