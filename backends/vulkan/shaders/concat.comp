#version 450
// dst = [src0, src1] along dimension P(64), F32; one invocation per element.
#include "common.glsl"
layout(local_size_x = 256) in;

void main() {
    uint idx = flat_id(256u);
    if (idx >= P(65))
        return;
    uint dim = P(64);
    uvec4 c = unravel(3u, idx);
    uint split = NE(0, dim);
    uint dst = addr(3u, c.x, c.y, c.z, c.w);
    float v;
    if (c[dim] < split) {
        v = a_f32(addr(0u, c.x, c.y, c.z, c.w));
    } else {
        c[dim] -= split;
        v = b_f32(addr(1u, c.x, c.y, c.z, c.w));
    }
    d_put_f32(dst, v);
}
