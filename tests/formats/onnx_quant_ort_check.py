"""Cross-checks onnx_quant_write.py's numpy reference (the values
test_formats_onnx_quant.c requires tport to load) against onnxruntime
itself: one-node models (MatMulNBits 4- and 8-bit, blocks 16..128, with
and without packed zero points, f32 and f16 scales, K no multiple of the
block; DequantizeLinear INT4 blocked, UINT8 per channel with zero points,
INT8 blocked) are run by onnxruntime-node on an identity A, so Y is the
dequantized weight.  Not in ctest (it needs npm's onnxruntime-node):

  npm install --ignore-scripts --prefix DIR onnxruntime-node@1.22.0
  python3 tests/formats/onnx_quant_ort_check.py DIR/node_modules

Exit 0 when every 4-bit and QDQ case is exact and every 8-bit case is
within 4 ulps (onnxruntime's CPU kernel runs 8-bit weights only with
accuracy_level 4, which rounds A to int8 blocks: 4 ulps of the largest
weight), 1 otherwise, 77 when
node or onnxruntime-node is missing.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_quant_write import INT4, code_tensor, quant_dq, quant_nbits, raw  # noqa: E402

RUN_JS = r"""
const ort = require(process.argv[2] + '/onnxruntime-node');
const fs = require('fs');
(async () => {
  const dir = process.argv[3];
  for (const c of JSON.parse(fs.readFileSync(dir + '/cases.json'))) {
    const K = c.K, a = c.f16 ? new Uint16Array(K * K) : new Float32Array(K * K);
    for (let i = 0; i < K; i++) a[i * K + i] = c.f16 ? 0x3c00 : 1;
    const s = await ort.InferenceSession.create(dir + '/' + c.name + '.onnx', {graphOptimizationLevel: 'disabled'});
    const y = (await s.run({A: new ort.Tensor(c.f16 ? 'float16' : 'float32', a, [K, K])})).Y.data;
    fs.writeFileSync(dir + '/' + c.name + '.out', Buffer.from(y.buffer, y.byteOffset, y.byteLength));
  }
})().catch(e => { console.error(e.message); process.exit(1); });
"""


def model(path, nodes, inits, tdt, K, N, opsets):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("A", tdt, [K, K])],
                          [helper.make_tensor_value_info("Y", tdt, [K, N])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 10
    onnx.save_model(m, path)


def main():
    mods = sys.argv[1] if len(sys.argv) > 1 else ""
    if not shutil.which("node") or not os.path.isdir(os.path.join(mods, "onnxruntime-node")):
        print("skipped: node or onnxruntime-node (argument: its node_modules folder) missing")
        return 77
    d = tempfile.mkdtemp(prefix="tport-ort-")
    rng = np.random.default_rng(7)
    cases, refs = [], {}
    for bits in (4, 8):
        for bs in (16, 32, 64, 128):
            for zp in (False, True):
                for sdt in (np.float32, np.float16):
                    K, N = 96 + bs // 2, 5
                    W = (rng.standard_normal((N, K)) * 0.3).astype(np.float32)
                    b, s, zb, ref = quant_nbits(W, bits, bs, sdt, zp)
                    tdt = TensorProto.FLOAT16 if sdt == np.float16 else TensorProto.FLOAT
                    inits, ins = [raw("B", b, TensorProto.UINT8), raw("S", s, tdt)], ["A", "B", "S"]
                    if zb is not None:
                        inits.append(raw("Z", zb, TensorProto.UINT8))
                        ins.append("Z")
                    node = helper.make_node("MatMulNBits", ins, ["Y"], domain="com.microsoft", K=K, N=N, bits=bits,
                                            block_size=bs, accuracy_level=4 if bits == 8 else 0)
                    name = "nbits%d_bs%d_zp%d_%s" % (bits, bs, zp, "f16" if sdt == np.float16 else "f32")
                    model("%s/%s.onnx" % (d, name), [node], inits, tdt, K, N, [("", 21), ("com.microsoft", 1)])
                    refs[name] = ref.T.astype(sdt).astype(np.float32)  # Y = I @ W^T, in A's type
                    cases.append({"name": name, "K": K, "f16": sdt == np.float16, "ulps": 4 if bits == 8 else 0})
    for form in ("int4_block32", "uint8_channel_zp", "int8_block32"):
        K, N = 64, 6
        W = (rng.standard_normal((N, K)) * 0.3).astype(np.float32)
        if form == "int4_block32":
            q, s, z, r = quant_dq(W.T, True, 32, 0, False, 4, np.float32)
            inits, ins, attrs = [code_tensor("X", q, INT4, q.shape), raw("S", s, TensorProto.FLOAT)], ["X", "S"], \
                {"axis": 0, "block_size": 32}
        elif form == "uint8_channel_zp":
            q, s, z, r = quant_dq(W.T, False, 0, 1, True, 8, np.float32)
            inits = [code_tensor("X", q, TensorProto.UINT8, q.shape), raw("S", s, TensorProto.FLOAT),
                     code_tensor("Z", z, TensorProto.UINT8, z.shape)]
            ins, attrs = ["X", "S", "Z"], {"axis": 1}
        else:
            q, s, z, r = quant_dq(W.T, True, 32, 0, False, 8, np.float32)
            inits, ins, attrs = [code_tensor("X", q, TensorProto.INT8, q.shape), raw("S", s, TensorProto.FLOAT)], \
                ["X", "S"], {"axis": 0, "block_size": 32}
        nodes = [helper.make_node("DequantizeLinear", ins, ["Wd"], **attrs), helper.make_node("MatMul", ["A", "Wd"], ["Y"])]
        model("%s/dq_%s.onnx" % (d, form), nodes, inits, TensorProto.FLOAT, K, N, [("", 21)])
        refs["dq_" + form] = r.astype(np.float32)
        cases.append({"name": "dq_" + form, "K": K, "f16": False, "ulps": 0})
    with open(d + "/cases.json", "w") as f:
        json.dump(cases, f)
    with open(d + "/run.js", "w") as f:
        f.write(RUN_JS)
    if subprocess.run(["node", d + "/run.js", os.path.abspath(mods), d]).returncode != 0:
        return 1
    bad = 0
    for c in cases:
        ref = refs[c["name"]]
        with open("%s/%s.out" % (d, c["name"]), "rb") as f:
            b = f.read()
        got = (np.frombuffer(b, np.float16).astype(np.float32) if c["f16"] else np.frombuffer(b, np.float32))
        got = got.reshape(ref.shape)
        ulp = np.spacing(np.abs(ref).max().astype(np.float16 if c["f16"] else np.float32)).astype(np.float32)
        ok = np.all(np.abs(got - ref) <= c["ulps"] * ulp)
        bad += not ok
        print("%-28s %s (max |diff| %g)" % (c["name"], "ok" if ok else "DIFFERS", np.abs(got - ref).max()))
    shutil.rmtree(d)
    print("%d cases, %d differ" % (len(cases), bad))
    return 1 if bad else 0


sys.exit(main())
