#!/usr/bin/env python3
"""Reference tool, not run by the tests: quantized entries of arch_refs.json
whose files are llama.cpp's own quantizations (README.md, "llama.cpp's
Q4_K_M and Q8_0 files").

usage: make_quant_mix.py TPORT QUANTIZE WORKDIR NAME=FTYPE:BASE...
       make_quant_mix.py --check TPORT QUANTIZE WORKDIR NAME...

QUANTIZE is llamacpp_quantize (llamacpp_quantize.c, this folder; it finds
llama.cpp's libraries through LLAMA_BINS). For NAME=FTYPE:BASE (FTYPE
q4_k_m or q8_0, BASE the name of an existing entry whose f32 recipe is
used, with "--dim" etc. as written in the new entry if it already exists)
it writes the f32 file with `TPORT synth`, quantizes it with
llama_model_quantize (no importance matrix), reads the type llama.cpp gave
every tensor and writes the entry NAME with the recipe `--type T
--tensor-type NAME=T...` (T the type most 2-D tensors got, one
--tensor-type for each other) and no runs (make_arch_refs.py adds them).
--check (and every new entry) regenerates both files from the entry's
recipe, tport synth's and llama.cpp's quantization of its f32 twin (the
recipe without --type and --tensor-type), and compares them tensor by
tensor: same names, types, shapes and data bytes, or it fails naming the
first difference. So llama.cpp's ids on tport synth's file are its ids
on its own quantization.
"""
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REFS = os.path.join(HERE, "arch_refs.json")
FTYPES = {"q4_k_m": 15, "q8_0": 7}
# ggml type id: (name for tport synth, block elements, block bytes)
GGML = {0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20), 6: ("q5_0", 32, 22),
        7: ("q5_1", 32, 24), 8: ("q8_0", 32, 34), 10: ("q2_k", 256, 84), 11: ("q3_k", 256, 110),
        12: ("q4_k", 256, 144), 13: ("q5_k", 256, 176), 14: ("q6_k", 256, 210)}


def read_gguf(path):
    """{name: (type, shape, bytes)} of a GGUF v2/v3 file (stdlib only)."""
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        pos += n
        return data[pos - n:pos].decode("utf-8", "replace")

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(scalar[t])

    assert data[:4] == b"GGUF", path
    pos = 4
    take("I")
    n_tensors, n_kv = take("Q"), take("Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        nd = take("I")
        shape = [take("Q") for _ in range(nd)]
        infos.append((name, shape, take("I"), take("Q")))
    align = kv.get("general.alignment", 32)
    base = (pos + align - 1) // align * align
    out = {}
    for name, shape, t, off in infos:
        n = 1
        for d in shape:
            n *= d
        _, be, bb = GGML[t]
        out[name] = (t, shape, data[base + off:base + off + n // be * bb])
    return out


def f32_twin(synth):
    a = synth.split()
    keep = []
    i = 0
    while i < len(a):
        if a[i] in ("--type", "--tensor-type"):
            i += 2
            continue
        keep.append(a[i])
        i += 1
    return " ".join(keep)


def synth(tport, recipe, path):
    subprocess.run([tport, "synth"] + recipe.split() + ["-o", path], check=True, capture_output=True)


def llama_quantize(quantize, src, dst, ftype):
    subprocess.run([quantize, src, dst, str(FTYPES[ftype])], check=True, capture_output=True)


def mix_recipe(q):
    """--type T --tensor-type ... for the 2-D tensors of a quantized file."""
    types = {name: GGML[t][0] for name, (t, shape, _) in q.items() if len(shape) >= 2}
    counts = {}
    for t in types.values():
        counts[t] = counts.get(t, 0) + 1
    main = max(sorted(counts), key=lambda t: counts[t])
    extra = ["--tensor-type %s=%s" % (n, t) for n, t in types.items() if t != main]
    return "--type %s" % main + "".join(" " + x for x in extra)


def compare(a, b):
    """The first difference of two files' tensors, or None."""
    if sorted(a) != sorted(b):
        return "tensor names differ: %s" % sorted(set(a) ^ set(b))
    for n in a:
        ta, sa, da = a[n]
        tb, sb, db = b[n]
        if ta != tb or sa != sb:
            return "%s: type %s %s vs %s %s" % (n, GGML[ta][0], sa, GGML[tb][0], sb)
        if da != db:
            k = next(i for i in range(len(da)) if da[i] != db[i])
            return "%s (%s): byte %d of %d differs" % (n, GGML[ta][0], k, len(da))
    return None


def entry_ftype(e):
    return e["quantizer"].split()[-1].lower()


def check(tport, quantize, work, e):
    base = f32_twin(e["synth"])
    f32 = os.path.join(work, e["name"] + "-f32.gguf")
    ref = os.path.join(work, e["name"] + "-llama.gguf")
    mine = os.path.join(work, e["name"] + ".gguf")
    synth(tport, base, f32)
    llama_quantize(quantize, f32, ref, entry_ftype(e))
    synth(tport, e["synth"], mine)
    q = read_gguf(ref)
    diff = compare(q, read_gguf(mine))
    recipe = mix_recipe(q)
    print("%-18s %s: %s" % (e["name"], recipe.replace(" --tensor-type", "\n    --tensor-type"),
                            "identical tensors" if not diff else "DIFFERS: " + diff), flush=True)
    return diff is None


def main():
    args = sys.argv[1:]
    only_check = args[0] == "--check"
    if only_check:
        args = args[1:]
    tport, quantize, work = args[:3]
    os.makedirs(work, exist_ok=True)
    d = json.load(open(REFS))
    by_name = {e["name"]: e for e in d["archs"]}
    ok = True
    for spec in args[3:]:
        if only_check:
            ok &= check(tport, quantize, work, by_name[spec])
            continue
        name, rest = spec.split("=")
        ftype, base_name = rest.split(":")
        base = by_name[base_name]
        e = by_name.get(name)
        if e is None:
            e = {k: v for k, v in base.items() if k not in ("runs", "vocab_from")}
            e["name"] = name
            e["synth"] = f32_twin(base["synth"])
            d["archs"].append(e)
            by_name[name] = e
        e["quantizer"] = "llama_model_quantize " + ftype.upper()
        f32 = os.path.join(work, name + "-f32.gguf")
        ref = os.path.join(work, name + "-llama.gguf")
        synth(tport, f32_twin(e["synth"]), f32)
        llama_quantize(quantize, f32, ref, ftype)
        e["synth"] = f32_twin(e["synth"]) + " " + mix_recipe(read_gguf(ref))
        e.setdefault("runs", [])
        ok &= check(tport, quantize, work, e)
    if not only_check:
        sys.path.insert(0, HERE)
        from make_arch_refs import dump
        with open(REFS, "w") as f:
            f.write(dump(d) + "\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
