#version 450
// Tiled product for batches: a 16x16 workgroup computes a 32x32 tile of dst
// (rows i of the chunk x columns j), each invocation a 2x2 block, stepping
// over k in slices of 16 staged (dequantized) in shared memory.
// Workgroup (x -> row tile, y -> column tile, z -> i2 + ne2*i3).  Words from
// 64: first row of the chunk, rows in the chunk, r2, r3.
#include "common.glsl"
#include "dequant.glsl"
#define TM 32u
#define TN 32u
#define TK 16u
layout(local_size_x = 16, local_size_y = 16) in;

shared float as_[TM][TK + 1u];
shared float bs_[TN][TK + 1u];

void main() {
    uint M = P(65), N = NE(3, 1), K = NE(0, 0);
    uint n2 = NE(3, 2);
    uint i2 = gl_WorkGroupID.z % n2, i3 = gl_WorkGroupID.z / n2;
    uint r0 = gl_WorkGroupID.x * TM, c0 = gl_WorkGroupID.y * TN;
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    uint lid = ty * 16u + tx;
    uint abase = OFF(0) + (i2 / P(66)) * NB(0, 2) + (i3 / P(67)) * NB(0, 3);
    uint as = NB(0, 0);
    float acc00 = 0.0, acc01 = 0.0, acc10 = 0.0, acc11 = 0.0;
    for (uint k0 = 0u; k0 < K; k0 += TK) {
        // 512 elements of each slice, two per invocation
        [[unroll]] for (uint e = 0u; e < 2u; e++) {
            uint l = lid + e * 256u;
            uint rr = l / TK, kk = l % TK;
            uint row = r0 + rr, k = k0 + kk;
            as_[rr][kk] = (row < M && k < K) ? deq(abase + row * NB(0, 1), k, as) : 0.0;
            uint col = c0 + rr;
            bs_[rr][kk] = (col < N && k < K) ? b_f32(addr(1u, k, col, i2, i3)) : 0.0;
        }
        barrier();
        [[unroll]] for (uint kk = 0u; kk < TK; kk++) {
            float a0 = as_[tx][kk], a1 = as_[tx + 16u][kk];
            float b0 = bs_[ty][kk], b1 = bs_[ty + 16u][kk];
            acc00 += a0 * b0;
            acc01 += a0 * b1;
            acc10 += a1 * b0;
            acc11 += a1 * b1;
        }
        barrier();
    }
    uint lo = P(64);
    uint ra = r0 + tx, rb = r0 + tx + 16u, ca = c0 + ty, cb = c0 + ty + 16u;
    if (ra < M && ca < N) d_put_f32(addr(3u, lo + ra, ca, i2, i3), acc00);
    if (ra < M && cb < N) d_put_f32(addr(3u, lo + ra, cb, i2, i3), acc01);
    if (rb < M && ca < N) d_put_f32(addr(3u, lo + rb, ca, i2, i3), acc10);
    if (rb < M && cb < N) d_put_f32(addr(3u, lo + rb, cb, i2, i3), acc11);
}
