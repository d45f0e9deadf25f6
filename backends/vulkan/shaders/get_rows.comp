#version 450
// dst[:, i10, i11, i12] = src0[:, ids[i10, i11, i12], i11, i12] as F32, one
// invocation per destination element.  src0 may be bound in chunks of rows
// (a table larger than one binding range): this dispatch holds rows
// [P(64), P(64) + P(65)) and writes only the elements whose id falls there;
// the dispatch with P(66) = 1 also writes zeros for ids out of range.
#include "common.glsl"
#include "dequant.glsl"
layout(local_size_x = 256) in;

void main() {
    uint idx = flat_id(256u);
    if (idx >= P(67))
        return;
    uvec4 c = unravel(3u, idx);
    int id = b_i32(addr(1u, c.y, c.z, c.w, 0u));
    uint lo = P(64), n = P(65);
    uint dst = addr(3u, c.x, c.y, c.z, c.w);
    if (id < 0 || uint(id) >= P(69)) {
        if (P(66) != 0u)
            d_put_f32(dst, 0.0);
        return;
    }
    if (uint(id) < lo || uint(id) >= lo + n)
        return;
    uint row = OFF(0) + (uint(id) - lo) * NB(0, 1) + c.z * NB(0, 2) + c.w * NB(0, 3);
    d_put_f32(dst, deq(row, c.x, NB(0, 0)));
}
