"""Writes a block-quantized ONNX llama (with Debian's python3-onnx and
numpy) and, beside it, the float reference it must load as, for
test_formats_onnx_quant.c.  The weights are random (seeded): hidden 64,
4 heads (2 kv heads), ffn 96 (ffn_down's K = 96: a block of 64 is cut
short), 2 layers, 32000 tokens.

Each MatMul weight W [N, K] is quantized in numpy, then the reference
REF/model.safetensors holds (code - zero_point) * scale computed here in
float32 from the very codes, scales and zero points written to the ONNX
file: the com.microsoft.MatMulNBits contract (onnxruntime's contrib op
spec: B [N, ceil(K/bs), bs*bits/8] uint8, low nibble first; scales
[N*ceil(K/bs)]; zero points packed, default 2^(bits-1)) and
DequantizeLinear's (opset 21: y = (x - zero_point) * scale, per axis or
in blocks of block_size along axis; INT4 packed low nibble first).  The
graph wires the weights as exports do; it is read for its weights, never
run.

usage: onnx_quant_write.py FORM OUT_FOLDER REF_FOLDER
FORM: nbits4     4-bit, block 32, f16 scales, no zero points
      nbits4zp   4-bit, block 64, f16 scales, packed uint8 zero points, named
                 as genai's builder names pre-quantized weights
      nbits8     8-bit, block 32, f32 scales, default zero point 128
      nbits4b16  4-bit, block 16, f16 scales, no zero points, as external data
      qdq4       DequantizeLinear INT4, blocks of 32 along K, f16 scales
      qdq8       DequantizeLinear UINT8 per output channel with zero points
                 (f32 scales), and the embedding INT8 in blocks of 32
      gidx       nbits4 plus a g_idx input (refused)
      bits2      nbits4 declaring bits=2 (refused)
      bs24       nbits4 declaring block_size=24 (refused: no power of 2)
      shortb     nbits4 with one byte of B missing (refused)
      qdqact     qdq4 plus a DequantizeLinear of an activation (refused)
"""
import json
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

INT4, UINT4 = 22, 21  # TensorProto data types (onnx >= 1.16 names them)
H, FF, NH, NKV, V, L = 64, 96, 4, 2, 32000, 2


def raw(name, arr, dt, dims=None):
    t = TensorProto()
    t.name = name
    t.data_type = dt
    t.dims.extend(arr.shape if dims is None else dims)
    t.raw_data = np.ascontiguousarray(arr).tobytes()
    return t


def pack4(codes):
    """codes (uint8 0..15), flattened, two a byte, the first in the low nibble"""
    c = codes.reshape(-1).astype(np.uint8)
    if c.size % 2:
        c = np.concatenate([c, np.zeros(1, np.uint8)])
    return (c[0::2] | (c[1::2] << 4)).astype(np.uint8)


def quant_nbits(w, bits, bs, scale_dt, zp):
    """MatMulNBits of W [N, K]: (B bytes, scales, zero points or None, reference)"""
    n, k = w.shape
    nb = (k + bs - 1) // bs
    wp = np.zeros((n, nb * bs), np.float32)
    wp[:, :k] = w
    blocks = wp.reshape(n, nb, bs)
    qmax = (1 << bits) - 1
    if zp:
        lo, hi = np.minimum(blocks.min(2), 0), np.maximum(blocks.max(2), 0)
        s = ((hi - lo) / qmax).astype(scale_dt)
        s[s == 0] = 1
        z = np.clip(np.round(-lo / s.astype(np.float32)), 0, qmax).astype(np.int32)
    else:
        amax = np.abs(blocks).max(2)
        s = (amax / (qmax // 2)).astype(scale_dt)
        s[s == 0] = 1
        z = np.full((n, nb), 1 << (bits - 1), np.int32)
    sf = s.astype(np.float32)
    q = np.clip(np.round(blocks / sf[:, :, None]) + z[:, :, None], 0, qmax).astype(np.int32)
    ref = ((q.astype(np.float32) - z[:, :, None].astype(np.float32)) * sf[:, :, None]).reshape(n, nb * bs)[:, :k]
    if bits == 4:
        b = pack4(q.astype(np.uint8)).reshape(n, nb, bs // 2)
        zb = np.concatenate([pack4(z[i].astype(np.uint8)) for i in range(n)]) if zp else None
    else:
        b = q.astype(np.uint8).reshape(n, nb, bs)
        zb = z.astype(np.uint8).reshape(-1) if zp else None
    return b, s.reshape(-1), zb, np.ascontiguousarray(ref, dtype=np.float32)


def quant_dq(x, signed4, bs, axis, zp, bits, scale_dt):
    """DequantizeLinear of x [R, C] (blocks of bs along axis; bs 0: per
    channel along axis): (codes, scale, zero point or None, reference)"""
    tr = axis == 0 if bs else axis == 1  # xa: groups along its last axis
    xa = x.T if tr else x
    rows, cols = xa.shape
    b = bs if bs else cols
    nb = (cols + b - 1) // b
    xp = np.zeros((rows, nb * b), np.float32)
    xp[:, :cols] = xa
    blk = xp.reshape(rows, nb, b)
    if bits == 4:
        lo_c, hi_c = (-8, 7) if signed4 else (0, 15)
    else:
        lo_c, hi_c = (-128, 127) if signed4 else (0, 255)
    if zp:
        lo, hi = np.minimum(blk.min(2), 0), np.maximum(blk.max(2), 0)
        s = ((hi - lo) / (hi_c - lo_c)).astype(scale_dt)
        s[s == 0] = 1
        z = np.clip(np.round(lo_c - lo / s.astype(np.float32)), lo_c, hi_c).astype(np.int32)
    else:
        s = (np.abs(blk).max(2) / hi_c).astype(scale_dt)
        s[s == 0] = 1
        z = np.zeros((rows, nb), np.int32)
    sf = s.astype(np.float32)
    q = np.clip(np.round(blk / sf[:, :, None]) + z[:, :, None], lo_c, hi_c).astype(np.int32)
    ref = ((q.astype(np.float32) - z[:, :, None].astype(np.float32)) * sf[:, :, None]).reshape(rows, nb * b)[:, :cols]
    q, ref = q.reshape(rows, nb * b)[:, :cols], np.ascontiguousarray(ref, dtype=np.float32)
    if tr:
        q, ref, s, z = q.T, ref.T, s.T, z.T
    if not bs:  # per channel: 1-D, the length of the axis
        s, z = s.reshape(-1), z.reshape(-1)
    return np.ascontiguousarray(q), np.ascontiguousarray(s), (np.ascontiguousarray(z) if zp else None), \
        np.ascontiguousarray(ref)


def code_tensor(name, q, dt, dims):
    if dt in (INT4, UINT4):
        return raw(name, pack4((q & 15).astype(np.uint8)), dt, dims)
    return raw(name, q.astype(np.int8 if dt == TensorProto.INT8 else np.uint8), dt, dims)


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        dt = {np.float32: "F32", np.float16: "F16"}[arr.dtype.type]
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    form, out, ref_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    rng = np.random.default_rng(43)
    hd = H // NH
    w = {"model.embed_tokens.weight": (rng.standard_normal((V, H)) * 0.5).astype(np.float16),
         "model.norm.weight": (1 + 0.1 * rng.standard_normal(H)).astype(np.float16),
         "lm_head.weight": (rng.standard_normal((V, H)) * 0.2).astype(np.float32)}
    for il in range(L):
        p = "model.layers.%d." % il
        w[p + "input_layernorm.weight"] = (1 + 0.1 * rng.standard_normal(H)).astype(np.float16)
        w[p + "post_attention_layernorm.weight"] = (1 + 0.1 * rng.standard_normal(H)).astype(np.float16)
        for name, shape in (("self_attn.q_proj", (H, H)), ("self_attn.k_proj", (NKV * hd, H)),
                            ("self_attn.v_proj", (NKV * hd, H)), ("self_attn.o_proj", (H, H)),
                            ("mlp.gate_proj", (FF, H)), ("mlp.up_proj", (FF, H)), ("mlp.down_proj", (H, FF))):
            w[p + name + ".weight"] = (rng.standard_normal(shape) * 0.3).astype(np.float32)

    ref, inits, nodes = {}, [], []
    nbits = form.startswith("nbits") or form in ("gidx", "bits2", "bs24", "shortb")
    opts = {"nbits4": (4, 32, np.float16, False), "nbits4zp": (4, 64, np.float16, True),
            "nbits8": (8, 32, np.float32, False), "nbits4b16": (4, 16, np.float16, False),
            "gidx": (4, 32, np.float16, False), "bits2": (4, 32, np.float16, False),
            "bs24": (4, 32, np.float16, False), "shortb": (4, 32, np.float16, False)}

    def linear(hf, x_in):
        module = hf[: -len(".weight")]
        W = w[hf]
        y = "/" + module.replace(".", "/") + "_out"
        if nbits:
            bits, bs, sdt, zp = opts[form]
            b, s, zb, r = quant_nbits(W, bits, bs, sdt, zp)
            node = "/%s/MatMul_Q%d" % (module.replace(".self_attn.", ".attn.").replace(".", "/"), bits)
            node = node.replace("/layers/", "/layers.")  # onnxruntime-genai's "/model/layers.0/attn/q_proj"
            # onnxruntime's quantizer names "NAME.MatMul.weight_Q4"; genai's
            # builder from a pre-quantized model "/.../MatMulNBits" + ".qweight"
            names = ["_Q%d" % bits, "_scales", "_zero_points"]
            base = module.replace(".self_attn.", ".attn.") + ".MatMul.weight"
            if zp:
                node = node.replace("/MatMul_Q4", "/MatMulNBits")
                base, names = node[1:].replace("/", "."), [".qweight", ".scales", ".qzeros"]
            if form == "shortb":  # B's dims as they should be, one byte short
                inits.append(raw(base + names[0], b.reshape(-1)[:-1], TensorProto.UINT8, b.shape))
            else:
                inits.append(raw(base + names[0], b, TensorProto.UINT8))
            inits.append(raw(base + names[1], s, TensorProto.FLOAT16 if sdt == np.float16 else TensorProto.FLOAT))
            ins = [x_in, base + names[0], base + names[1]]
            if zb is not None:
                inits.append(raw(base + names[2], zb, TensorProto.UINT8))
                ins.append(base + names[2])
            if form == "gidx":
                inits.append(helper.make_tensor(base + "_g_idx", TensorProto.INT32, [W.shape[1]],
                                                [i // bs for i in range(W.shape[1])]))
                ins += [""] * (4 - len(ins)) + [base + "_g_idx"]
            nodes.append(helper.make_node("MatMulNBits", ins, [y], name=node, domain="com.microsoft",
                                          K=W.shape[1], N=W.shape[0], bits=2 if form == "bits2" else bits,
                                          block_size=24 if form == "bs24" else bs, accuracy_level=4))
        else:  # QDQ: x [K, N] = W^T, blocks along K (axis 0) or per output channel (axis 1)
            k = len(inits)
            xname, sname = "onnx::MatMul_%d_quantized" % k, "onnx::MatMul_%d_scale" % k
            if form in ("qdq4", "qdqact"):
                q, s, z, r = quant_dq(W.T, True, 32, 0, False, 4, np.float16)
                inits.extend([code_tensor(xname, q, INT4, q.shape), raw(sname, s, TensorProto.FLOAT16)])
                dq = helper.make_node("DequantizeLinear", [xname, sname], [xname + "_dq"], name=xname + "_DQ",
                                      axis=0, block_size=32)
            else:
                q, s, z, r = quant_dq(W.T, False, 0, 1, True, 8, np.float32)
                zname = "onnx::MatMul_%d_zero_point" % k
                inits.extend([code_tensor(xname, q, TensorProto.UINT8, q.shape), raw(sname, s, TensorProto.FLOAT),
                              code_tensor(zname, z, TensorProto.UINT8, z.shape)])
                dq = helper.make_node("DequantizeLinear", [xname, sname, zname], [xname + "_dq"], name=xname + "_DQ",
                                      axis=1)
            nodes.append(dq)
            r = r.T
            nodes.append(helper.make_node("MatMul", [x_in, xname + "_dq"], [y],
                                          name="/" + module.replace(".", "/") + "/MatMul"))
        ref[hf] = np.ascontiguousarray(r, dtype=np.float32)
        return y

    def norm(hf, x_in):
        inits.append(raw(hf, w[hf], TensorProto.FLOAT16))
        ref[hf] = w[hf]
        nodes.append(helper.make_node("SimplifiedLayerNormalization", [x_in, hf], [hf + "_out"],
                                      name="/" + hf.replace(".", "/")))
        return hf + "_out"

    emb = "model.embed_tokens.weight"
    if form == "qdq8":  # the embedding table: INT8 in blocks of 32 along the hidden axis
        q, s, z, r = quant_dq(w[emb].astype(np.float32), True, 32, 1, False, 8, np.float32)
        inits += [code_tensor(emb + "_quantized", q, TensorProto.INT8, q.shape), raw(emb + "_scale", s, TensorProto.FLOAT)]
        nodes.append(helper.make_node("DequantizeLinear", [emb + "_quantized", emb + "_scale"], ["emb_dq"],
                                      name="/model/embed_tokens/DequantizeLinear", axis=1, block_size=32))
        nodes.append(helper.make_node("Gather", ["emb_dq", "input_ids"], ["h0"], name="/model/embed_tokens/Gather"))
        ref[emb] = r
    else:
        inits.append(raw(emb, w[emb], TensorProto.FLOAT16))
        nodes.append(helper.make_node("Gather", [emb, "input_ids"], ["h0"], name="/model/embed_tokens/Gather"))
        ref[emb] = w[emb]
    h = "h0"
    for il in range(L):
        p = "model.layers.%d." % il
        a = norm(p + "input_layernorm.weight", h)
        q, k, v = (linear(p + "self_attn.%s_proj.weight" % x, a) for x in "qkv")
        nodes.append(helper.make_node("Concat", [q, k, v], [p + "qkv"], axis=-1))
        o = linear(p + "self_attn.o_proj.weight", p + "qkv")
        nodes.append(helper.make_node("Add", [h, o], [p + "res"]))
        f = norm(p + "post_attention_layernorm.weight", p + "res")
        g, u = linear(p + "mlp.gate_proj.weight", f), linear(p + "mlp.up_proj.weight", f)
        nodes.append(helper.make_node("Mul", [g, u], [p + "gu"]))
        d = linear(p + "mlp.down_proj.weight", p + "gu")
        nodes.append(helper.make_node("Add", [p + "res", d], [p + "out"]))
        h = p + "out"
    if form == "qdqact":  # activations quantized: QuantizeLinear's output dequantized
        nodes.append(helper.make_node("DequantizeLinear", [h, "act_scale"], [h + "_dq"], name="/model/act/DequantizeLinear"))
        inits.append(raw("act_scale", np.array(0.5, np.float32), TensorProto.FLOAT))
        h = h + "_dq"
    hn = norm("model.norm.weight", h)
    logits = linear("lm_head.weight", hn)
    graph = helper.make_graph(nodes, "decoder", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, None])],
                              [helper.make_tensor_value_info(logits, TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, producer_name="tport-test", producer_version="1",
                              opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    if form == "nbits4b16":
        onnx.save_model(model, out + "/model.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=0)
    else:
        onnx.save_model(model, out + "/model.onnx")
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H, "intermediate_size": FF,
           "num_attention_heads": NH, "num_key_value_heads": NKV, "num_hidden_layers": L, "vocab_size": V,
           "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 256, "bos_token_id": 1,
           "eos_token_id": 2, "tie_word_embeddings": False, "torch_dtype": "float32"}
    for folder in (out, ref_dir):
        with open(folder + "/config.json", "w") as f:
            json.dump(cfg, f)
    write_safetensors(ref_dir + "/model.safetensors", ref)


if __name__ == "__main__":
    main()
