// Shared by every compute shader.  Bindings: 0..2 sources, 3 destination,
// 4 the parameter words of every dispatch of a recorded graph; the push
// constant says where this dispatch's words start.  Parameter words, per
// operand k (0, 1, 2 = sources, 3 = destination) at 16*k: ne[4], nb[4]
// (bytes), then the operand's byte offset inside its binding; op-specific
// words from 64 on.  Every address is a byte offset inside a binding, so
// the same shader reads F16 and quantized blocks at any 2-byte boundary.
//
// USE_16BIT: 16- and 8-bit storage (the device has both); otherwise every
// narrow load is a shift out of a 32-bit word and a 16-bit store is two
// atomics on its word (the fallback path).
#extension GL_EXT_control_flow_attributes : enable
#ifdef USE_16BIT
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#endif

layout(push_constant) uniform PushConstants { uint pbase; } pc;
layout(binding = 4) readonly buffer Params { uint params[]; };

layout(binding = 0) readonly buffer A32 { uint a32[]; };
layout(binding = 1) readonly buffer B32 { uint b32[]; };
layout(binding = 2) readonly buffer C32 { uint c32[]; };
layout(binding = 3) buffer D32 { uint d32[]; };
#ifdef USE_16BIT
layout(binding = 0) readonly buffer A16 { float16_t a16[]; };
layout(binding = 0) readonly buffer A8 { uint8_t a8[]; };
layout(binding = 3) buffer D16 { float16_t d16[]; };
#endif

uint P(uint i) { return params[pc.pbase + i]; }
float PF(uint i) { return uintBitsToFloat(P(i)); }
uint NE(uint k, uint d) { return P(16u * k + d); }
uint NB(uint k, uint d) { return P(16u * k + 4u + d); }
uint OFF(uint k) { return P(16u * k + 8u); }

// Byte offset of element (i0, i1, i2, i3) of operand k.
uint addr(uint k, uint i0, uint i1, uint i2, uint i3) {
    return OFF(k) + i0 * NB(k, 0) + i1 * NB(k, 1) + i2 * NB(k, 2) + i3 * NB(k, 3);
}

// Linear index -> coordinates in operand k's shape.
uvec4 unravel(uint k, uint idx) {
    uint n0 = NE(k, 0), n1 = NE(k, 1), n2 = NE(k, 2);
    uint i0 = idx % n0; idx /= n0;
    uint i1 = idx % n1; idx /= n1;
    uint i2 = idx % n2;
    return uvec4(i0, i1, i2, idx / n2);
}

// Invocation index of a 2-D dispatch of 1-D work (x is capped at 65535 groups).
uint flat_id(uint wg_size) {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * wg_size + gl_LocalInvocationID.x;
}

uint a_u8(uint b) {
#ifdef USE_16BIT
    return uint(a8[b]);
#else
    return (a32[b >> 2] >> ((b & 3u) * 8u)) & 0xffu;
#endif
}
int a_i8(uint b) { return int(a_u8(b) << 24) >> 24; }
float a_f16(uint b) {
#ifdef USE_16BIT
    return float(a16[b >> 1]);
#else
    return unpackHalf2x16((a32[b >> 2] >> ((b & 2u) * 8u)) & 0xffffu).x;
#endif
}
float a_f32(uint b) { return uintBitsToFloat(a32[b >> 2]); }
float b_f32(uint b) { return uintBitsToFloat(b32[b >> 2]); }
int b_i32(uint b) { return int(b32[b >> 2]); }
float b_f16(uint b) { return unpackHalf2x16((b32[b >> 2] >> ((b & 2u) * 8u)) & 0xffffu).x; }
float c_f32(uint b) { return uintBitsToFloat(c32[b >> 2]); }
float d_f32(uint b) { return uintBitsToFloat(d32[b >> 2]); }
void d_put_f32(uint b, float v) { d32[b >> 2] = floatBitsToUint(v); }
void d_put_f16(uint b, float v) {
#ifdef USE_16BIT
    d16[b >> 1] = float16_t(v);
#else
    // two invocations may write the two halves of one word at once
    uint shift = (b & 2u) * 8u;
    uint h = packHalf2x16(vec2(v, 0.0)) & 0xffffu;
    atomicAnd(d32[b >> 2], ~(0xffffu << shift));
    atomicOr(d32[b >> 2], h << shift);
#endif
}
