#!/usr/bin/env python3
"""A small Unigram (T5-style) vocabulary, made the same way every time.

SentencePiece (Debian's python3-sentencepiece) trains a unigram model of
300 pieces on data/perplexity_text.txt with T5's settings (nmt_nfkc
normalization, pad 0 / eos 1 / unk 2, no bos, one thread), then this
writes what llama.cpp's converter (conversion/t5.py) writes for it:

  OUT/t5.gguf       vocabulary-only GGUF, tokenizer.ggml.model "t5", the
                    pieces, scores and types, add_space_prefix and
                    remove_extra_whitespaces from the model's
                    normalizer_spec, its precompiled_charsmap
  OUT/ws.gguf       the same with remove_extra_whitespaces false
  OUT/ud.gguf       t5.gguf with two user-defined tokens appended (USER)
  OUT/hf-*/         Hugging Face folders (config.json, tokenizer.json) whose
                    tokenizer.json is what transformers' converters wrote
                    for such a model over the years (see FOLDERS below)
  OUT/spm_ids.json  SentencePiece's own ids for every text of TEXTS (for
                    t5: the model as trained; for ws: remove_extra_whitespaces
                    turned off in its normalizer_spec), and a digest of the
                    pieces and scores, so a test can tell that it trained the
                    model the references were made with

usage: ugm_vocab.py OUT_DIR
       ugm_vocab.py --xlmr XLMR_VOCAB.gguf FOLDER   (XLM-R's tokenizer.json)
       ugm_vocab.py --refs OUT_DIR LLAMA_IDS_JSON > data/tokenizer_ugm_refs.json
(the second joins data/make_tokenizer_ugm_refs.mjs's output on OUT_DIR with
SentencePiece's ids into the test's references)
"""
import base64
import hashlib
import json
import os
import struct
import sys

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as spm_pb2

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "data", "perplexity_text.txt")

# The test strings: spaces, runs of spaces, tabs and newlines, NFKC-affected
# characters (full-width letters, ligatures, superscripts, the no-break
# space, compatibility ideographs), characters the pieces lack (unknown),
# digits, invalid UTF-8 (as a latin-1 escape, see texts()), the empty text.
TEXTS = [
    "",
    " ",
    "   ",
    "Hello world",
    "The harbour town woke slowly.",
    " leading space",
    "trailing space ",
    "two  spaces   three    four",
    "tab\there\nnewline\r\nwindows",
    "\n\n\nnewlines only before",
    "digits 0123456789 and 3.14159, 1,000,000",
    "\uff26\uff55\uff4c\uff4c\u3000width \uff11\uff12\uff13",
    "ligatures \ufb01ne \ufb02ow \u2460 x\u00b2 \u2167",
    "no\u00a0break\u2009thin\u200bzero",
    "caf\u00e9 cafe\u0301 na\u00efve \u00c5ngstr\u00f6m \u212b",
    "\u4f60\u597d\u4e16\u754c \u3053\u3093\u306b\u3061\u306f \ud55c\uad6d\uc5b4",
    "emoji \U0001F600\U0001F680 and \u2603",
    "unknown \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627 \u0928\u092e\u0938\u094d\u0924\u0947",
    "Fishermen carried their nets down the stone steps",
    "MiXeD CaSe ALLCAPS lowercase",
    "punctuation!? (brackets) [x] {y} <z> \"quotes\" 'single' -- ...",
    "a\x00b control\x01chars\x7f",
    "\u2581already escaped\u2581",
    "\xff\xfe invalid",
    "a<extra_id_0>b <extra_id_0> end<extra_id_",
    "<\uff55\uff44> and <\uff55\uff58 partial \uff55\uff58",
]

# User-defined tokens (added_tokens.json in conversion/t5.py: type 4, score
# -1000) appended for ud.gguf and hf-ud: text along them is not normalized
# (llama.cpp keeps the longest prefix along the trie of user-defined tokens
# as it is, even one that is no whole token: "<\uff55\uff58" stays
# full-width)
USER = ["<extra_id_0>", "<\uff55\uff44>"]


def texts():
    """The texts as bytes: a string holding \\xff or \\xfe stands for
    invalid UTF-8 (those bytes as they are); every other is UTF-8."""
    out = []
    for t in TEXTS:
        if "\xff" in t or "\xfe" in t:
            out.append(t.encode("latin-1", errors="strict") if all(ord(c) < 256 for c in t)
                       else t.encode("utf-8"))
        else:
            out.append(t.encode("utf-8"))
    return out


def train(prefix):
    if hasattr(spm, "set_random_generator_seed"):
        spm.set_random_generator_seed(1)
    spm.SentencePieceTrainer.train(
        input=CORPUS, model_prefix=prefix, vocab_size=300, model_type="unigram",
        character_coverage=1.0, normalization_rule_name="nmt_nfkc", num_threads=1,
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1, minloglevel=2)
    with open(prefix + ".model", "rb") as f:
        return f.read()


# ---- GGUF v3, vocabulary only -----------------------------------------------
U8, I32, U32, F32, BOOL, STRING, ARRAY = 0, 5, 4, 6, 7, 8, 9


def gguf_str(s):
    b = s if isinstance(s, bytes) else s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_kv(key, vtype, value, elem=None):
    out = gguf_str(key) + struct.pack("<I", vtype)
    if vtype == ARRAY:
        out += struct.pack("<IQ", elem, len(value))
        if elem == STRING:
            out += b"".join(gguf_str(v) for v in value)
        elif elem == U8:
            out += bytes(value)
        else:
            fmt = {I32: "<i", F32: "<f", U32: "<I"}[elem]
            out += b"".join(struct.pack(fmt, v) for v in value)
    elif vtype == STRING:
        out += gguf_str(value)
    elif vtype == BOOL:
        out += struct.pack("<B", 1 if value else 0)
    else:
        out += struct.pack({U32: "<I", F32: "<f", I32: "<i"}[vtype], value)
    return out


def read_gguf_kv(path):
    """The metadata of a GGUF v2/v3 file (little-endian), as a dict."""
    with open(path, "rb") as f:
        data = f.read()
    sizes = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    pos = 24

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, data, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    def string():
        nonlocal pos
        n = take("<Q")
        pos += n
        return data[pos - n:pos]

    def value(t):
        nonlocal pos
        if t == STRING:
            return string()
        if t == ARRAY:
            et, n = take("<I"), take("<Q")
            if et == U8:
                pos += n
                return data[pos - n:pos]
            return [value(et) for _ in range(n)]
        return take(sizes[t])

    kv = {}
    for _ in range(struct.unpack_from("<Q", data, 16)[0]):
        key = string().decode()
        kv[key] = value(take("<I"))
    return kv


def write_gguf(path, tokens, scores, types, add_prefix, remove_ws, charsmap):
    kvs = [
        gguf_kv("general.architecture", STRING, "t5"),
        gguf_kv("general.name", STRING, "ugm-test"),
        gguf_kv("t5.context_length", U32, 512),
        gguf_kv("t5.embedding_length", U32, 64),
        gguf_kv("t5.feed_forward_length", U32, 128),
        gguf_kv("t5.block_count", U32, 1),
        gguf_kv("t5.attention.head_count", U32, 2),
        gguf_kv("t5.attention.key_length", U32, 32),
        gguf_kv("t5.attention.value_length", U32, 32),
        gguf_kv("t5.attention.layer_norm_epsilon", F32, 1e-6),
        gguf_kv("t5.attention.layer_norm_rms_epsilon", F32, 1e-6),
        gguf_kv("t5.attention.relative_buckets_count", U32, 32),
        gguf_kv("t5.decoder_start_token_id", U32, 0),
        gguf_kv("tokenizer.ggml.model", STRING, "t5"),
        gguf_kv("tokenizer.ggml.pre", STRING, "default"),
        gguf_kv("tokenizer.ggml.tokens", ARRAY, tokens, STRING),
        gguf_kv("tokenizer.ggml.scores", ARRAY, scores, F32),
        gguf_kv("tokenizer.ggml.token_type", ARRAY, types, I32),
        gguf_kv("tokenizer.ggml.add_space_prefix", BOOL, add_prefix),
        gguf_kv("tokenizer.ggml.remove_extra_whitespaces", BOOL, remove_ws),
        gguf_kv("tokenizer.ggml.precompiled_charsmap", ARRAY, charsmap, U8),
        gguf_kv("tokenizer.ggml.eos_token_id", U32, 1),
        gguf_kv("tokenizer.ggml.unknown_token_id", U32, 2),
        gguf_kv("tokenizer.ggml.padding_token_id", U32, 0),
    ]
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))


# ---- Hugging Face folders ----------------------------------------------------
SP = "\u2581"


def metaspace(old):
    if old:
        return {"type": "Metaspace", "replacement": SP, "add_prefix_space": True}
    return {"type": "Metaspace", "replacement": SP, "prepend_scheme": "always", "split": True}


# name -> (GGUF it must equal, normalizer after Precompiled, pre-tokenizer):
# transformers' SpmConverter of 2020 (Precompiled alone, WhitespaceSplit then
# Metaspace), of 2021-2023 (Replace " {2,}" -> " ", Metaspace add_prefix_space),
# of 2024 on (Strip right, Replace " {2,}" -> "\u2581", Metaspace
# prepend_scheme); and a folder of the model with remove_extra_whitespaces off
# (Precompiled alone, Metaspace).
FOLDERS = {
    "hf-t5": ("t5", [{"type": "Strip", "strip_left": False, "strip_right": True},
                     {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": SP}], metaspace(False)),
    "hf-t5-2021": ("t5", [{"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}], metaspace(True)),
    "hf-t5-2020": ("t5", [], {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, metaspace(True)]}),
    "hf-ws": ("ws", [], metaspace(False)),
    "hf-ud": ("ud", [{"type": "Strip", "strip_left": False, "strip_right": True},
                     {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": SP}], metaspace(False)),
}


def write_folder(path, tokens, scores, charsmap, norm_rest, pre, user=(), specials=range(3), unk=2, post=None):
    os.makedirs(path, exist_ok=True)
    added = [{"id": i, "content": tokens[i].decode(), "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True} for i in specials]
    added += [{"id": len(tokens) + k, "content": u, "single_word": False, "lstrip": False, "rstrip": False,
               "normalized": False, "special": False} for k, u in enumerate(user)]
    norm = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()}
    if norm_rest:
        norm = {"type": "Sequence", "normalizers": [norm] + norm_rest}
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": norm, "pre_tokenizer": pre,
        "post_processor": post or {"type": "TemplateProcessing",
                           "single": [{"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "</s>", "type_id": 0}},
                                    {"Sequence": {"id": "B", "type_id": 0}},
                                    {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                           "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}},
        "decoder": metaspace(False),
        "model": {"type": "Unigram", "unk_id": unk,
                  "vocab": [[t.decode(), s] for t, s in zip(tokens, scores)], "byte_fallback": False},
    }
    with open(os.path.join(path, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump({"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}, f)
    # tensorport reads a folder as a model: a llama-class config and one
    # tensor (the tokenizer does not depend on the architecture)
    hidden = 8
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": len(tokens) + len(user),
                   "hidden_size": hidden, "intermediate_size": 16, "num_hidden_layers": 1,
                   "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 512,
                   "rms_norm_eps": 1e-6, "eos_token_id": 1, "pad_token_id": 0}, f)
    data = bytes(4 * hidden * (len(tokens) + len(user)))
    header = json.dumps({"model.embed_tokens.weight": {"dtype": "F32", "shape": [len(tokens) + len(user), hidden],
                                                       "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(os.path.join(path, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)


def xlmr_folder(gguf, path):
    """An XLM-RoBERTa tokenizer.json (as transformers 4.2x wrote
    FacebookAI/xlm-roberta-base's: Precompiled then Replace / {2,}/,
    Metaspace with add_prefix_space, RobertaProcessing) from the pieces,
    scores, types and charsmap of a llama.cpp XLM-R vocabulary."""
    kv = read_gguf_kv(gguf)
    tokens, scores, types = kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.scores"], kv["tokenizer.ggml.token_type"]
    specials = [i for i, t in enumerate(types) if t in (2, 3)]
    unk = types.index(2)
    post = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True,
            "add_prefix_space": True}
    write_folder(path, tokens, scores, kv["tokenizer.ggml.precompiled_charsmap"],
                 [{"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}], metaspace(True),
                 specials=specials, unk=unk, post=post)
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
                   "sep_token": "</s>", "cls_token": "<s>", "mask_token": "<mask>"}, f)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    model = train(os.path.join(out, "spm"))
    proto = spm_pb2.ModelProto()
    proto.ParseFromString(model)
    ns = proto.normalizer_spec
    add_prefix, remove_ws = ns.add_dummy_prefix, ns.remove_extra_whitespaces
    sp = spm.SentencePieceProcessor(model_proto=model)
    tokens, scores, types = [], [], []
    for i in range(sp.vocab_size()):  # conversion/t5.py's types
        tokens.append(sp.IdToPiece(i).encode("utf-8"))
        scores.append(sp.GetScore(i))
        types.append(2 if sp.IsUnknown(i) else 3 if sp.IsControl(i) else 5 if sp.IsUnused(i)
                     else 6 if sp.IsByte(i) else 1)
    charsmap = bytes(ns.precompiled_charsmap)
    with open(os.path.join(out, "charsmap.bin"), "wb") as f:
        f.write(charsmap)
    write_gguf(os.path.join(out, "t5.gguf"), tokens, scores, types, add_prefix, remove_ws, charsmap)
    write_gguf(os.path.join(out, "ws.gguf"), tokens, scores, types, add_prefix, False, charsmap)
    write_gguf(os.path.join(out, "ud.gguf"), tokens + [u.encode() for u in USER], scores + [-1000.0] * len(USER),
               types + [4] * len(USER), add_prefix, remove_ws, charsmap)
    for name, (gguf, rest, pre) in FOLDERS.items():
        write_folder(os.path.join(out, name), tokens, scores, charsmap, rest, pre, USER if gguf == "ud" else ())
    proto.normalizer_spec.remove_extra_whitespaces = False
    sp_ws = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    digest = hashlib.sha256()
    for t, s in zip(tokens, scores):
        digest.update(t + b"\0" + struct.pack("<f", s))
    ids = {"t5": [], "ws": []}
    for t in texts():
        # SentencePiece takes str; invalid UTF-8 has no str, so it gets none
        try:
            s = t.decode("utf-8")
        except UnicodeDecodeError:
            s = None
        ids["t5"].append(None if s is None else sp.EncodeAsIds(s))
        ids["ws"].append(None if s is None else sp_ws.EncodeAsIds(s))
    with open(os.path.join(out, "spm_ids.json"), "w") as f:
        json.dump({"sentencepiece": spm.__version__, "pieces_sha256": digest.hexdigest(),
                   "add_dummy_prefix": add_prefix, "remove_extra_whitespaces": remove_ws,
                   "charsmap_bytes": len(charsmap), "ids": ids}, f)
    for i, t in enumerate(texts()):
        with open(os.path.join(out, "text%02d.txt" % i), "wb") as f:
            f.write(t)


def make_refs(out, llama_json):
    with open(os.path.join(out, "spm_ids.json")) as f:
        spm_ids = json.load(f)
    with open(llama_json, encoding="utf-8") as f:
        llama = json.load(f)
    files = {"t5": "$OUT/t5.gguf", "ws": "$OUT/ws.gguf", "ud": "$OUT/ud.gguf",
             "nomic-bert-moe": "$SHARED/models/vocab/ggml-vocab-nomic-bert-moe.gguf"}
    vocabs = {}
    for name, v in llama.items():
        v = dict(v, file=files[name])
        for i, c in enumerate(v["cases"]):
            if name in spm_ids["ids"]:
                c["spm"] = c["ids"] is not None and spm_ids["ids"][name][i] == c["ids"]
        vocabs[name] = v
    refs = {
        "produced_by": "tests/model/ugm_vocab.py OUT (SentencePiece %s), then node-llama-cpp 3.21.1 (prebuilt "
                       "llama.cpp release v0.4.0): node data/make_tokenizer_ugm_refs.mjs OUT t5=OUT/t5.gguf "
                       "ws=OUT/ws.gguf ud=OUT/ud.gguf nomic-bert-moe=../shared/models/vocab/ggml-vocab-nomic-bert-moe.gguf > "
                       "LLAMA.json; ugm_vocab.py --refs OUT LLAMA.json; ids = common_tokenize(add_special=false, "
                       "parse_special=false); spm: SentencePiece's EncodeAsIds gives the same ids"
                       % spm_ids["sentencepiece"],
        "sentencepiece": spm_ids["sentencepiece"],
        "pieces_sha256": spm_ids["pieces_sha256"],
        "folders": {name: gguf for name, (gguf, _, _) in FOLDERS.items()},
        "vocabs": vocabs,
    }
    json.dump(refs, sys.stdout, ensure_ascii=False, indent=1)
    print()


if __name__ == "__main__":
    if sys.argv[1] == "--refs":
        make_refs(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "--xlmr":
        xlmr_folder(sys.argv[2], sys.argv[3])
    else:
        main()
