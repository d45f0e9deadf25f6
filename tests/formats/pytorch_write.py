#!/usr/bin/python3
"""Writes the PyTorch checkpoints test_formats_pytorch reads, with real
PyTorch (Debian's python3-torch) and the weights of a llama2.c checkpoint
(the legacy layout of ../shared/models/stories260K.bin):

  meta/consolidated.00.pth + params.json  f32, zip; a transposed view
      (column-major strides), norms as views into one storage (storage
      offsets), output.weight sharing tok_embeddings' storage
  legacy/consolidated.00.pth + params.json  the same, legacy stream
  hf/pytorch_model.bin + config.json  f32, Hugging Face names, q/k permuted
      as transformers' convert_llama_weights_to_hf.py does, with the
      rotary_emb.inv_freq buffers old checkpoints carry
  f16/consolidated.00.pth, bf16/pytorch_model.bin  half / bfloat16 copies
      (+ their configs), and f16/ref.f32 bf16/ref.f32 (not used by torch:
      the values torch rounded to, as f32, tensor after tensor)
  int8/int8.pt  int8 tensors (one contiguous, one a transposed view)
  hostile/*  pickles that must be refused: a __reduce__ to os.system (zip
      and legacy; run, it would create hostile/PICKLE-RAN), an unknown
      global, a whole nn.Module

usage: pytorch_write.py STORIES260K.bin OUTDIR
"""
import collections
import json
import os
import pickle
import struct
import sys
import zipfile

import torch


def read_llama2c(path):
    with open(path, "rb") as f:
        raw = f.read()
    dim, hidden, n_layers, n_heads, n_kv, vocab, seq = struct.unpack("<7i", raw[:28])
    shared = vocab > 0
    vocab = abs(vocab)
    data = torch.frombuffer(bytearray(raw[28:]), dtype=torch.float32)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = 1
        for s in shape:
            n *= s
        t = data[pos:pos + n].reshape(shape).clone()
        pos += n
        return t

    hd = dim // n_heads
    kv_dim = n_kv * hd
    w = {}
    w["tok"] = take(vocab, dim)
    w["att_norm"] = take(n_layers, dim)
    w["wq"] = take(n_layers, dim, dim)
    w["wk"] = take(n_layers, kv_dim, dim)
    w["wv"] = take(n_layers, kv_dim, dim)
    w["wo"] = take(n_layers, dim, dim)
    w["ffn_norm"] = take(n_layers, dim)
    w["w1"] = take(n_layers, hidden, dim)
    w["w2"] = take(n_layers, dim, hidden)
    w["w3"] = take(n_layers, hidden, dim)
    w["norm"] = take(dim)
    take(seq, hd // 2)  # freq_cis_real
    take(seq, hd // 2)  # freq_cis_imag
    w["out"] = w["tok"] if shared else take(vocab, dim)
    hp = dict(dim=dim, hidden=hidden, n_layers=n_layers, n_heads=n_heads, n_kv=n_kv, vocab=vocab, seq=seq)
    return w, hp


def meta_state(w, hp, dtype, tricks):
    sd = collections.OrderedDict()
    L = hp["n_layers"]
    tok = w["tok"].to(dtype)
    sd["tok_embeddings.weight"] = tok
    if tricks:
        # every norm a view into one storage: storage offsets
        flat = torch.cat([w["att_norm"].reshape(-1), w["ffn_norm"].reshape(-1), w["norm"]]).to(dtype)
        d = hp["dim"]
        norms = [flat[i * d:(i + 1) * d] for i in range(2 * L + 1)]
    else:
        norms = [w["att_norm"][i].to(dtype) for i in range(L)] + [w["ffn_norm"][i].to(dtype) for i in range(L)]
        norms.append(w["norm"].to(dtype))
    for i in range(L):
        wq = w["wq"][i].to(dtype)
        if tricks and i == 0:
            wq = wq.t().contiguous().t()  # same values, column-major strides
        sd[f"layers.{i}.attention.wq.weight"] = wq
        sd[f"layers.{i}.attention.wk.weight"] = w["wk"][i].to(dtype)
        sd[f"layers.{i}.attention.wv.weight"] = w["wv"][i].to(dtype)
        sd[f"layers.{i}.attention.wo.weight"] = w["wo"][i].to(dtype)
        sd[f"layers.{i}.feed_forward.w1.weight"] = w["w1"][i].to(dtype)
        sd[f"layers.{i}.feed_forward.w2.weight"] = w["w2"][i].to(dtype)
        sd[f"layers.{i}.feed_forward.w3.weight"] = w["w3"][i].to(dtype)
        sd[f"layers.{i}.attention_norm.weight"] = norms[i]
        sd[f"layers.{i}.ffn_norm.weight"] = norms[L + i]
    sd["norm.weight"] = norms[2 * L]
    # the tied classifier: the same tensor (one storage) under two names
    sd["output.weight"] = tok if w["out"] is w["tok"] else w["out"].to(dtype)
    return sd


def permute(t, n_heads):
    d1, d2 = t.shape
    return t.view(n_heads, d1 // n_heads // 2, 2, d2).transpose(1, 2).reshape(d1, d2)


def hf_state(w, hp, dtype):
    sd = collections.OrderedDict()
    sd["model.embed_tokens.weight"] = w["tok"].to(dtype)
    hd = hp["dim"] // hp["n_heads"]
    inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
    for i in range(hp["n_layers"]):
        p = f"model.layers.{i}."
        sd[p + "self_attn.q_proj.weight"] = permute(w["wq"][i], hp["n_heads"]).to(dtype)
        sd[p + "self_attn.k_proj.weight"] = permute(w["wk"][i], hp["n_kv"]).to(dtype)
        sd[p + "self_attn.v_proj.weight"] = w["wv"][i].to(dtype)
        sd[p + "self_attn.o_proj.weight"] = w["wo"][i].to(dtype)
        sd[p + "mlp.gate_proj.weight"] = w["w1"][i].to(dtype)
        sd[p + "mlp.down_proj.weight"] = w["w2"][i].to(dtype)
        sd[p + "mlp.up_proj.weight"] = w["w3"][i].to(dtype)
        sd[p + "input_layernorm.weight"] = w["att_norm"][i].to(dtype)
        sd[p + "post_attention_layernorm.weight"] = w["ffn_norm"][i].to(dtype)
        sd[p + "self_attn.rotary_emb.inv_freq"] = inv_freq
    sd["model.norm.weight"] = w["norm"].to(dtype)
    sd["lm_head.weight"] = w["out"].to(dtype)
    return sd


def params_json(hp):
    return dict(dim=hp["dim"], n_layers=hp["n_layers"], n_heads=hp["n_heads"], n_kv_heads=hp["n_kv"],
                vocab_size=hp["vocab"], multiple_of=32, norm_eps=1e-5)


def config_json(hp):
    return dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=hp["dim"],
                intermediate_size=hp["hidden"], num_hidden_layers=hp["n_layers"],
                num_attention_heads=hp["n_heads"], num_key_value_heads=hp["n_kv"], vocab_size=hp["vocab"],
                max_position_embeddings=hp["seq"], rms_norm_eps=1e-5, torch_dtype="float32")


def write_dir(out, sub, fname, sd, cfg_name, cfg, legacy=False):
    d = os.path.join(out, sub)
    os.makedirs(d, exist_ok=True)
    torch.save(sd, os.path.join(d, fname), _use_new_zipfile_serialization=not legacy)
    with open(os.path.join(d, cfg_name), "w") as f:
        json.dump(cfg, f)
    return d


def write_ref(d, sd):
    """The values each tensor holds, as f32, in state dict order (GGUF
    names are the C test's business)."""
    with open(os.path.join(d, "ref.f32"), "wb") as f:
        for name, t in sd.items():
            f.write(t.to(torch.float32).contiguous().numpy().tobytes())


class Evil:
    """Unpickled by Python, this runs a command: it creates MARKER."""
    marker = "/nonexistent"

    def __reduce__(self):
        return (os.system, ("touch " + Evil.marker,))


def zip_with_pickle(path, data):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", data)
        z.writestr("archive/version", "3\n")


def main():
    src, out = sys.argv[1], sys.argv[2]
    w, hp = read_llama2c(src)
    write_dir(out, "meta", "consolidated.00.pth", meta_state(w, hp, torch.float32, True), "params.json",
              params_json(hp))
    write_dir(out, "legacy", "consolidated.00.pth", meta_state(w, hp, torch.float32, True), "params.json",
              params_json(hp), legacy=True)
    write_dir(out, "hf", "pytorch_model.bin", hf_state(w, hp, torch.float32), "config.json", config_json(hp))
    sd16 = meta_state(w, hp, torch.float16, False)
    write_ref(write_dir(out, "f16", "consolidated.00.pth", sd16, "params.json", params_json(hp)), sd16)
    sdb = meta_state(w, hp, torch.bfloat16, False)
    write_ref(write_dir(out, "bf16", "consolidated.00.pth", sdb, "params.json", params_json(hp)), sdb)

    os.makedirs(os.path.join(out, "int8"), exist_ok=True)
    a = torch.arange(-7, 8, dtype=torch.int8).reshape(3, 5)
    b = torch.arange(0, 12, dtype=torch.int8).reshape(3, 4).t()  # [4, 3], strides (1, 4)
    torch.save(collections.OrderedDict(a=a, b=b), os.path.join(out, "int8", "int8.pt"))

    h = os.path.join(out, "hostile")
    os.makedirs(h, exist_ok=True)
    Evil.marker = os.path.join(h, "PICKLE-RAN")
    zip_with_pickle(os.path.join(h, "reduce_os_system.pt"), pickle.dumps({"x": Evil()}, protocol=2))
    with open(os.path.join(h, "legacy_os_system.pt"), "wb") as f:  # legacy stream, evil state dict
        for obj in (0x1950a86a20f9469cfc6c, 1001, dict(protocol_version=1001, little_endian=True)):
            pickle.dump(obj, f, protocol=2)
        f.write(pickle.dumps({"x": Evil()}, protocol=2))
        pickle.dump([], f, protocol=2)
    zip_with_pickle(os.path.join(h, "unknown_global.pt"),
                    pickle.dumps(collections.OrderedDict(w=collections.Counter("ab")), protocol=2))
    torch.save({"x": torch.nn.Linear(2, 2)}, os.path.join(h, "module.pt"))  # a whole nn.Module: refused


if __name__ == "__main__":
    main()
