#!/usr/bin/env python3
"""Reference tool, not run by the tests: (re)makes entries of arch_refs.json
with llama.cpp's greedy ids (llamacpp_greedy.cpp, see README.md; it finds
llama.cpp's libraries through the LLAMA_BINS environment variable).

usage: make_arch_refs.py [--search N] TPORT GREEDY SHARED WORKDIR [NAME...]

For each named entry (all with runs when none is named) it writes the file
with `TPORT synth RECIPE [--vocab-from SHARED/VOCAB]`, runs GREEDY on every
run's prompt and rewrites the entry's runs: prompt_ids, ids, min_margin (the
smallest top-1/top-2 logit gap over the generated steps) and kv_f16_dev (the
largest logit change an f16 KV cache causes on the same tokens). It prints
one line per run as well. With --search N, an entry that cannot fail
(good() below) gets another recipe: the seeds SEED + 1000 k (k < N) with
--out-gain 4 or 8 and --norm-noise 0.5, the first that can fail.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REFS = os.path.join(HERE, "arch_refs.json")
PROMPTS = [([1, 17, 42, 99, 123, 256, 311, 400], 16),
           ([300, 5, 77, 2, 250, 64, 128, 9, 31, 480, 3, 200], 24)]
TEXT = "Hello world, this is a test of 123 tokens."


def long_prompt(n):
    """An entry's "long_prompt": N adds a run of N prompt ids (all below
    500, so every vocabulary has them) and 24 generated: positions past
    where short prompts reach, for RoPE scaling and frequency factors."""
    return [(7 * i * i + 13 * i + 5) % 499 + 1 for i in range(n)]


def greedy(exe, path, n, prompt):
    args = [exe, path, str(n)] + (["text", prompt] if isinstance(prompt, str)
                                       else ["ids"] + [str(i) for i in prompt])
    out = subprocess.run(args, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


# What a reference must show to be able to fail, from arch_refs.json's
# "can_fail" (test_arch_refs.c checks the recorded numbers against the same
# floors): MIN_DISTINCT distinct ids in each run, and no generated step
# closer to a tie than min_margin_floor(e, run). README.md says why.
CAN_FAIL = json.load(open(REFS))["can_fail"]
MIN_DISTINCT = CAN_FAIL["min_distinct"]
QUANT_FLOOR = CAN_FAIL["min_margin_quantized"]


def quantized(e):
    return "--type" in e["synth"].split()


def min_margin_floor(e, run):
    if quantized(e):
        return QUANT_FLOOR
    return max(CAN_FAIL["min_margin_f32"], CAN_FAIL["min_margin_over_kv_f16_dev"] * run["kv_f16_dev"])


def run_good(e, r):
    return len(set(r["ids"])) >= MIN_DISTINCT and r["min_margin"] >= min_margin_floor(e, r)


def good(e):
    if e.get("min_runs"):
        return len(e["runs"]) >= e["min_runs"] and all(run_good(e, r) for r in e["runs"])
    return len(e["runs"]) > 0 and all(run_good(e, r) for r in e["runs"])


def with_option(synth, flag, value):
    a = synth.split()
    if flag in a:
        a[a.index(flag) + 1] = str(value)
    else:
        i = a.index("--type") if "--type" in a else len(a)
        a[i:i] = [flag, str(value)]
    return " ".join(a)


def search(tport, exe, shared, work, e, tries):
    """Seeds and residual gains until the entry can fail (f32 refs of
    random tied-embedding models echo their input at gain 1)."""
    base = int(e["synth"].split()[e["synth"].split().index("--seed") + 1])
    for k in range(tries):
        for gain in (4, 8):
            c = dict(e)
            c["synth"] = with_option(with_option(with_option(e["synth"], "--seed", base + 1000 * k),
                                                 "--out-gain", gain), "--norm-noise", 0.5)
            make(tport, exe, shared, work, c)
            if good(c):
                e.update(c)
                return True
    return False


def make(tport, exe, shared, work, e):
    path = os.path.join(work, e["name"] + ".gguf")
    cmd = [tport, "synth"] + e["synth"].split()
    if e.get("vocab_from"):
        cmd += ["--vocab-from", os.path.join(shared, e["vocab_from"])]
    subprocess.run(cmd + ["-o", path], check=True, capture_output=True)
    runs = [{"prompt_ids": p, "n": n} for p, n in PROMPTS]
    if e.get("long_prompt"):
        runs.append({"prompt_ids": long_prompt(e["long_prompt"]), "n": 24})
    if e.get("vocab_from"):
        runs.append({"prompt_text": TEXT, "n": 12})
    out = []
    for r in runs:
        prompt = r.get("prompt_text", r.get("prompt_ids"))
        a = greedy(exe, path, r["n"], prompt)
        o = {}
        if "prompt_text" in r:
            o["prompt_text"] = r["prompt_text"]
        o["prompt_ids"] = a["prompt_ids"]
        if quantized(e):
            # tensorport's quantized kernels round otherwise than llama.cpp's:
            # a step closer to a tie than the floor is a coin toss, so the
            # reference ends before it
            k = next((i for i, g in enumerate(a["gaps"]) if g < QUANT_FLOOR), len(a["gaps"]))
            # ... and before an end of text: `tport run` stops there (the
            # generated vocabulary's EOS is id 2; llama.cpp's driver goes on)
            if not e.get("vocab_from") and 2 in a["ids"][:k]:
                k = a["ids"].index(2)
            a["ids"], a["min_margin"] = a["ids"][:k], min(a["gaps"][:k], default=0.0)
        o["ids"] = a["ids"]
        o["min_margin"] = float("%.3g" % a["min_margin"])
        o["kv_f16_dev"] = float("%.3g" % a["kv_f16_dev"])
        out.append(o)
        print("%-18s %-5s distinct %2d  min_margin %.4g  kv_f16_dev %.4g" % (
            e["name"], "text" if "prompt_text" in r else len(r["prompt_ids"]),
            len(set(a["ids"])), a["min_margin"], a["kv_f16_dev"]), flush=True)
    # A quantized entry keeps the runs that can fail: all three clear of
    # the floor for 6 distinct ids are rare on random weights, and the f32
    # entry of the same architecture checks the graph with all three.
    # An entry with "min_runs" (issue 40's families: three or four runs,
    # one of them 96 prompt ids long) keeps the runs that can fail, and
    # needs min_runs of them: every run clear of the floor is rare there.
    e["runs"] = [r for r in out if run_good(e, r)] if quantized(e) or e.get("min_runs") else out


def dump(d):
    # one run per line keeps the diffs readable
    s = json.dumps(d, indent=1)
    import re
    return re.sub(r"\[\s+([-0-9.,\s]+?)\s+\]", lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]", s)


def main():
    tries = 0
    if sys.argv[1] == "--search":  # --search N: try N seeds for each failing entry
        tries = int(sys.argv[2])
        del sys.argv[1:3]
    tport, exe, shared, work = sys.argv[1:5]
    names = sys.argv[5:]
    os.makedirs(work, exist_ok=True)
    d = json.load(open(REFS))
    for e in d["archs"]:
        if (e["name"] in names) or (not names and e.get("runs")):
            make(tport, exe, shared, work, e)
            if tries and not good(e):
                found = search(tport, exe, shared, work, e, tries)
                print("%s: %s" % (e["name"], "found " + e["synth"] if found else "NOT FOUND"), flush=True)
    with open(REFS, "w") as f:
        f.write(dump(d) + "\n")


if __name__ == "__main__":
    main()
