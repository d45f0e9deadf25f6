#!/usr/bin/env python3
"""Writes a small random-weight gpt-oss Hugging Face folder as OpenAI's
gpt-oss checkpoints are distributed: config.json as gpt-oss-20b's (fewer
layers and experts, small dims; quantization_config mxfp4, YaRN,
alternating sliding/full layers), model.safetensors with the experts in
MXFP4 (U8 `*_blocks` [n_expert, rows, K/32, 16], two E2M1 codes a byte
with element 2i in the low nibble of byte i, and U8 `*_scales`
[n_expert, rows, K/32] E8M0 exponents; gate_up's rows alternate gate and
up), every other weight f32, and a byte-level BPE tokenizer.json.

Standard library only (random.Random(SEED): the same folder from any
Python 3).  test_hf_gptoss_mxfp4.sh writes it and compares tensorport
with llama.cpp on it (tests/model/data/gptoss_mxfp4_refs.json).

usage: gptoss_mxfp4_write.py OUTDIR [--hostile CASE]
  CASE (a folder that must be refused): blocks-shape (blocks not
  [.., 16]), no-scales (down_proj_blocks without its scales),
  scales-length (scales of the wrong K/32), u8-elsewhere (a U8 router);
  or CASE sharded: the same folder, not hostile, in two shards with an
  index (every *_blocks in the first, its scales in the second)
"""
import json
import os
import random
import struct
import sys

SEED = 149
N_EMBD, N_FF, N_HEAD, N_KV, HEAD_DIM = 64, 64, 4, 2, 16
N_LAYER, N_EXPERT, N_USED, WINDOW = 2, 4, 2, 8

# GPT-2's bytes_to_unicode: the byte-level BPE alphabet
def byte_chars():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"), ("e", "r"), ("o", "n"), ("Ġ", "s")]
SPECIALS = ["<|startoftext|>", "<|endoftext|>"]


def tokenizer(out):
    vocab = {c: i for i, c in enumerate(byte_chars())}
    for a, b in MERGES:
        vocab[a + b] = len(vocab)
    added = [{"id": len(vocab) + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(SPECIALS)]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                             "use_regex": True},
           "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                     "vocab": vocab, "merges": [a + " " + b for a, b in MERGES]}}
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": SPECIALS[0], "eos_token": SPECIALS[1], "add_bos_token": False}, f)
    return len(vocab) + len(SPECIALS)


def config(out, n_vocab):
    cfg = {
        "architectures": ["GptOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
        "eos_token_id": n_vocab - 1, "pad_token_id": n_vocab - 1, "experts_per_token": N_USED,
        "head_dim": HEAD_DIM, "hidden_act": "silu", "hidden_size": N_EMBD, "initial_context_length": 4096,
        "initializer_range": 0.02, "intermediate_size": N_FF,
        "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(N_LAYER)],
        "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": N_HEAD,
        "num_experts_per_tok": N_USED, "num_hidden_layers": N_LAYER, "num_key_value_heads": N_KV,
        "num_local_experts": N_EXPERT, "output_router_logits": False,
        "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                           "model.embed_tokens", "lm_head"],
                                "quant_method": "mxfp4"},
        "rms_norm_eps": 1e-05,
        "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                         "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
        "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": WINDOW, "swiglu_limit": 7.0,
        "tie_word_embeddings": False, "transformers_version": "4.55.0.dev0", "use_cache": True,
        "vocab_size": n_vocab}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


class Tensors:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.items = []  # (name, dtype, shape, bytes)

    def f32(self, name, shape, lo, hi):
        n = 1
        for d in shape:
            n *= d
        vals = [self.r.uniform(lo, hi) for _ in range(n)]
        self.items.append((name, "F32", list(shape), struct.pack("<%df" % n, *vals)))

    def u8(self, name, shape, lo, hi):
        n = 1
        for d in shape:
            n *= d
        self.items.append((name, "U8", list(shape), bytes(self.r.randint(lo, hi) for _ in range(n))))

    def write(self, path, items=None):
        header, off = {}, 0
        items = self.items if items is None else items
        for name, dtype, shape, data in items:
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
            off += len(data)
        header["__metadata__"] = {"format": "pt"}
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(h)))
            f.write(h)
            for _, _, _, data in items:
                f.write(data)

    def write_sharded(self, out):
        """Two shards and model.safetensors.index.json: every *_blocks
        tensor in the first, the rest (their scales) in the second."""
        shards = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
        parts = ([i for i in self.items if i[0].endswith("_blocks")],
                 [i for i in self.items if not i[0].endswith("_blocks")])
        weight_map = {}
        for shard, items in zip(shards, parts):
            self.write(os.path.join(out, shard), items)
            weight_map.update({i[0]: shard for i in items})
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": sum(len(i[3]) for i in self.items)}, "weight_map": weight_map}, f)


def weights(out, n_vocab, hostile):
    t = Tensors(SEED)
    t.f32("model.embed_tokens.weight", (n_vocab, N_EMBD), -1.0, 1.0)
    for il in range(N_LAYER):
        p = "model.layers.%d." % il
        t.f32(p + "input_layernorm.weight", (N_EMBD,), 0.8, 1.2)
        t.f32(p + "post_attention_layernorm.weight", (N_EMBD,), 0.8, 1.2)
        for name, rows in (("q", N_HEAD * HEAD_DIM), ("k", N_KV * HEAD_DIM), ("v", N_KV * HEAD_DIM)):
            t.f32(p + "self_attn.%s_proj.weight" % name, (rows, N_EMBD), -0.3, 0.3)
            t.f32(p + "self_attn.%s_proj.bias" % name, (rows,), -0.1, 0.1)
        t.f32(p + "self_attn.o_proj.weight", (N_EMBD, N_HEAD * HEAD_DIM), -0.2, 0.2)
        t.f32(p + "self_attn.o_proj.bias", (N_EMBD,), -0.1, 0.1)
        t.f32(p + "self_attn.sinks", (N_HEAD,), -1.0, 1.0)
        if hostile == "u8-elsewhere":
            t.u8(p + "mlp.router.weight", (N_EXPERT, N_EMBD), 0, 255)
        else:
            t.f32(p + "mlp.router.weight", (N_EXPERT, N_EMBD), -0.5, 0.5)
        t.f32(p + "mlp.router.bias", (N_EXPERT,), -0.2, 0.2)
        # E8M0 exponents 121..124: blocks of 2^-6 .. 2^-3 times E2M1's 0..6
        nb_in, nb_ff = N_EMBD // 32, N_FF // 32
        t.u8(p + "mlp.experts.gate_up_proj_blocks",
             (N_EXPERT, 2 * N_FF, nb_in, 8 if hostile == "blocks-shape" else 16), 0, 255)
        t.u8(p + "mlp.experts.gate_up_proj_scales", (N_EXPERT, 2 * N_FF, nb_in), 121, 124)
        t.f32(p + "mlp.experts.gate_up_proj_bias", (N_EXPERT, 2 * N_FF), -0.2, 0.2)
        t.u8(p + "mlp.experts.down_proj_blocks", (N_EXPERT, N_EMBD, nb_ff, 16), 0, 255)
        if hostile != "no-scales":
            t.u8(p + "mlp.experts.down_proj_scales",
                 (N_EXPERT, N_EMBD, nb_ff + 1 if hostile == "scales-length" else nb_ff), 121, 124)
        t.f32(p + "mlp.experts.down_proj_bias", (N_EXPERT, N_EMBD), -0.2, 0.2)
    t.f32("model.norm.weight", (N_EMBD,), 0.8, 1.2)
    t.f32("lm_head.weight", (n_vocab, N_EMBD), -0.5, 0.5)
    if hostile == "sharded":
        t.write_sharded(out)
    else:
        t.write(os.path.join(out, "model.safetensors"))


def main():
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--hostile"):
        sys.exit(__doc__)
    out = sys.argv[1]
    hostile = sys.argv[3] if len(sys.argv) == 4 else None
    os.makedirs(out, exist_ok=True)
    n_vocab = tokenizer(out)
    config(out, n_vocab)
    weights(out, n_vocab, hostile)


if __name__ == "__main__":
    main()
