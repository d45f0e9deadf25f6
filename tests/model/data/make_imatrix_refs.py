#!/usr/bin/env python3
"""Produces imatrix_refs.json: what llama-imatrix writes for random-weight
files that `tport synth` makes from the recipes below, on
perplexity_text.txt -- per weight its counts (per expert for an expert
stack), and per matrix the sum of its in_sum2 row and that row weighted by
column index + 1, plus the file's keys.  test_imatrix.py compares tport
imatrix's file against it.  Run outside CI (CI has no llama.cpp):
  make_imatrix_refs.py TPORT LLAMA_IMATRIX LLAMA_BINS_DIR SHARED > imatrix_refs.json
LLAMA_IMATRIX runs with LLAMA_BINS_DIR as its working directory, where ggml
finds its CPU backend libraries.

The qwen3moe recipe's seed (4043) is one where no token's router has a
near-tie that the last bits of tport's and llama.cpp's activations settle
differently (seeds 4041, 4042 and 4044 each have a token or two routed to
another expert): the counts are compared exactly."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from imatrix_read import read_gguf, summary  # noqa: E402

# name | synth arguments | vocab (under SHARED) | ctx | chunks (0 = all) |
# --chunk (chunks skipped first) | times the text is repeated (mixtral-long: chunks of 1030 tokens go in
# micro-batches of 512, 512 and 6, and the plain products leave the 6 out)
RECIPES = """
llama|--arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 192 --ctx 128 --seed 33 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-llama-spm.gguf|128|0|0|1
llama-from-chunk|--arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 192 --ctx 128 --seed 33 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-llama-spm.gguf|128|3|2|1
mixtral|--arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --ctx 128 --experts 8 --experts-used 2 --seed 131 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-llama-spm.gguf|64|5|0|1
mixtral-long|--arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --ctx 128 --experts 8 --experts-used 2 --seed 131 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-llama-spm.gguf|1030|0|0|3
qwen3moe|--arch qwen3moe --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-size 32 --ff 128 --ctx 128 --experts 8 --experts-used 2 --expert-ff 64 --seed 4043 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-qwen2.gguf|128|0|0|1
"""

TEXT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "perplexity_text.txt")

# What test_imatrix.py allows: the largest relative difference of a
# matrix's sum or weighted sum (and of the final perplexity printed, as
# test_perplexity allows for f32 weights: 1e-4).  Measured: at most 2e-4 (the activations of
# f32 weights through an f16 KV cache, summed in float in another order).
TOLERANCE = 1e-3


def recipes():
    for line in RECIPES.strip().splitlines():
        name, args, vocab, ctx, chunks, skip, repeat = line.split("|")
        yield {"name": name, "synth": args, "vocab": vocab, "ctx": int(ctx), "chunks": int(chunks),
               "from_chunk": int(skip), "repeat": int(repeat)}


def text_file(tmp, repeat):
    """perplexity_text.txt, or a file of it repeated in tmp."""
    if repeat == 1:
        return TEXT
    path = os.path.join(tmp, "text-x%d.txt" % repeat)
    with open(path, "w") as f:
        f.write(open(TEXT).read() * repeat)
    return path


def rounded(x):
    return float("%.7g" % x)


def main():
    tport, llama, bins, shared = sys.argv[1:5]
    out = {"about": "llama-imatrix on tport synth files and perplexity_text.txt (make_imatrix_refs.py)",
           "tolerance": TOLERANCE, "recipes": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in recipes():
            model, imx = os.path.join(tmp, "m.gguf"), os.path.join(tmp, "i.gguf")
            subprocess.run([tport, "synth"] + r["synth"].split() + ["--vocab-from", os.path.join(shared, r["vocab"]),
                           "-o", model], check=True, capture_output=True)
            cmd = [llama, "-m", model, "-f", text_file(tmp, r["repeat"]), "-c", str(r["ctx"]), "-t", "1", "-o", imx]
            if r["chunks"]:
                cmd += ["--chunks", str(r["chunks"])]
            if r["from_chunk"]:
                cmd += ["--chunk", str(r["from_chunk"])]
            p = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=bins)
            final = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("Final estimate: PPL = ")]
            r["ppl"] = float(final[-1].split()[4])
            keys, tensors = read_gguf(imx)
            entries = summary(tensors)
            for e in entries.values():
                e["sums"] = [rounded(x) for x in e["sums"]]
                e["wsums"] = [rounded(x) for x in e["wsums"]]
            r["keys"] = {k: keys[k] for k in ("general.type", "imatrix.chunk_count", "imatrix.chunk_size")}
            r["entries"] = entries
            out["recipes"].append(r)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
