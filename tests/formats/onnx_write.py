"""Writes an ONNX model (with Debian's python3-onnx) from a Hugging Face
llama folder's model.safetensors, in the forms decoders are exported in,
for test_formats_onnx.c.  The graph is a plausible decoder's wiring of the
weights (Gather, Mul, MatMul nodes named as torch.onnx names them); it is
read for its weights, never run.

usage: onnx_write.py SRC_FOLDER FORM OUT.onnx
FORM: torch     MatMul weights as [in, out] "onnx::MatMul_N" initializers in
                nodes "/model/layers.N/self_attn/q_proj/MatMul", inline data
      external  the same with every tensor in OUT.onnx.data
      genai     onnxruntime-genai names ("...attn.q_proj.MatMul.weight"),
                f32 tensors as float_data
      quant     torch, plus a com.microsoft MatMulNBits node
      escape    external, with the data's location "../escape.data"
      anon      a MatMul weight in a node named without a module path
"""
import json
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        raw = data[a:b]
        dt = {"F32": (np.float32, TensorProto.FLOAT), "F16": (np.float16, TensorProto.FLOAT16),
              "BF16": (np.uint16, TensorProto.BFLOAT16)}[e["dtype"]]
        out[name] = (np.frombuffer(raw, dtype=dt[0]).reshape(e["shape"]), dt[1])
    return out


def tensor(name, arr, onnx_type, float_data=False):
    if float_data and onnx_type == TensorProto.FLOAT:
        return helper.make_tensor(name, onnx_type, arr.shape, arr.flatten().tolist())
    t = TensorProto()
    t.name = name
    t.data_type = onnx_type
    t.dims.extend(arr.shape)
    t.raw_data = np.ascontiguousarray(arr).tobytes()
    return t


def main():
    src, form, out = sys.argv[1], sys.argv[2], sys.argv[3]
    w = read_safetensors(src + "/model.safetensors")
    inits, nodes, k = [], [], [0]
    x = "input_ids"

    def matmul(hf_name, node_name, x_in):
        arr, t = w[hf_name]
        module = hf_name[: -len(".weight")]
        if form == "genai":
            init = module.replace(".self_attn.", ".attn.") + ".MatMul.weight"
        else:
            k[0] += 1
            init = "onnx::MatMul_%d" % (100 + k[0])
        inits.append(tensor(init, arr.T, t, form == "genai"))
        y = node_name + "_output_0"
        nodes.append(helper.make_node("MatMul", [x_in, init], [y], name=node_name))
        return y

    def norm(hf_name, x_in):
        arr, t = w[hf_name]
        inits.append(tensor(hf_name, arr, t, form == "genai"))
        y = hf_name + "_out"
        nodes.append(helper.make_node("Mul", [x_in, hf_name], [y], name="/" + hf_name.replace(".", "/") + "/Mul"))
        return y

    emb, et = w["model.embed_tokens.weight"]
    inits.append(tensor("model.embed_tokens.weight", emb, et))
    nodes.append(helper.make_node("Gather", ["model.embed_tokens.weight", x], ["h0"], name="/model/embed_tokens/Gather"))
    h = "h0"
    n_layer = 1 + max(int(n.split(".")[2]) for n in w if n.startswith("model.layers."))
    for il in range(n_layer):
        p = "model.layers.%d." % il
        node = "/model/layers.%d/" % il
        a = norm(p + "input_layernorm.weight", h)
        if form == "anon" and il == 0:
            q = matmul(p + "self_attn.q_proj.weight", "MatMul_12", a)
        else:
            q = matmul(p + "self_attn.q_proj.weight", node + "self_attn/q_proj/MatMul", a)
        kk = matmul(p + "self_attn.k_proj.weight", node + "self_attn/k_proj/MatMul", a)
        v = matmul(p + "self_attn.v_proj.weight", node + "self_attn/v_proj/MatMul", a)
        att = node + "attn_out"
        nodes.append(helper.make_node("Add", [q, kk], [att + "_qk"]))
        nodes.append(helper.make_node("Add", [att + "_qk", v], [att]))
        o = matmul(p + "self_attn.o_proj.weight", node + "self_attn/o_proj/MatMul", att)
        nodes.append(helper.make_node("Add", [h, o], [node + "res1"]))
        f = norm(p + "post_attention_layernorm.weight", node + "res1")
        g = matmul(p + "mlp.gate_proj.weight", node + "mlp/gate_proj/MatMul", f)
        u = matmul(p + "mlp.up_proj.weight", node + "mlp/up_proj/MatMul", f)
        nodes.append(helper.make_node("Mul", [g, u], [node + "gu"]))
        d = matmul(p + "mlp.down_proj.weight", node + "mlp/down_proj/MatMul", node + "gu")
        nodes.append(helper.make_node("Add", [node + "res1", d], [node + "out"]))
        h = node + "out"
    # constants that are not weights: a RoPE cache and a shape
    inits.append(tensor("cos_cache", np.ones((16, 2), dtype=np.float32), TensorProto.FLOAT))
    nodes.append(helper.make_node("Mul", [h, "cos_cache"], ["h_rope"], name="/model/rotary_emb/Mul"))
    inits.append(helper.make_tensor("shape_const", TensorProto.INT64, [2], [1, -1]))
    nodes.append(helper.make_node("Reshape", ["h_rope", "shape_const"], ["h_flat"], name="/model/Reshape"))
    hn = norm("model.norm.weight", "h_flat")
    logits = matmul("lm_head.weight", "/lm_head/MatMul", hn)
    if form == "quant":
        inits.append(helper.make_tensor("qB", TensorProto.UINT8, [4, 1, 16], [0] * 64))
        nodes.append(helper.make_node("MatMulNBits", [logits, "qB"], ["qout"], name="/lm_head/MatMulNBits",
                                      domain="com.microsoft", K=32, N=4, bits=4, block_size=32))
    graph = helper.make_graph(nodes, "decoder", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, None])],
                              [helper.make_tensor_value_info(logits, TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, producer_name="tport-test", producer_version="1",
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    if form in ("external", "escape"):
        name = out.rsplit("/", 1)[-1] + ".data"
        onnx.save_model(model, out, save_as_external_data=True, all_tensors_to_one_file=True, location=name,
                        size_threshold=0)
        if form == "escape":
            m = onnx.load(out, load_external_data=False)
            for t in m.graph.initializer:
                for e in t.external_data:
                    if e.key == "location":
                        e.value = "../escape.data"
            onnx.save_model(m, out)
    else:
        onnx.save_model(model, out)


main()
