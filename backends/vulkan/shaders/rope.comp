#version 450
// Rotary embedding, one invocation per rotated pair or copied element, so an
// in-place rope reads each pair before writing it.  Words from 64: n_dims,
// mode (0 normal, 2 neox), freq_base, freq_scale, work items per row.
// src1 holds I32 positions indexed by i2.  theta_i = pos * freq_scale *
// base^(-2i/n_dims).
#include "common.glsl"
layout(local_size_x = 256) in;

void main() {
    uint idx = flat_id(256u);
    uint per_row = P(68);
    uint n1 = NE(3, 1), n2 = NE(3, 2), n3 = NE(3, 3);
    if (idx >= per_row * n1 * n2 * n3)
        return;
    uint w = idx % per_row, row = idx / per_row;
    uint i1 = row % n1, i2 = (row / n1) % n2, i3 = row / (n1 * n2);
    uint n_dims = P(64), half_dims = n_dims / 2u;
    uint x0 = addr(0u, 0u, i1, i2, i3), xs = NB(0, 0);
    uint y0 = addr(3u, 0u, i1, i2, i3), ys = NB(3, 0);
    if (w >= half_dims) { // past n_dims: copied
        uint i = n_dims + (w - half_dims);
        d_put_f32(y0 + i * ys, a_f32(x0 + i * xs));
        return;
    }
    bool neox = P(65) == 2u;
    uint j0 = neox ? w : 2u * w, j1 = neox ? w + half_dims : 2u * w + 1u;
    float pos = float(b_i32(OFF(1) + i2 * NB(1, 0)));
    float theta = pos * PF(67) * pow(PF(66), -2.0 * float(w) / float(n_dims));
    float c = cos(theta), s = sin(theta);
    float v0 = a_f32(x0 + j0 * xs), v1 = a_f32(x0 + j1 * xs);
    d_put_f32(y0 + j0 * ys, v0 * c - v1 * s);
    d_put_f32(y0 + j1 * ys, v0 * s + v1 * c);
}
