#!/usr/bin/env python3
"""Regenerates ggml_example_refs.json with ggml's historical example programs.

Reference tool, run by hand outside the test suite (README.md, section
"ggml_example_refs.json"). It needs ggml's history checked out twice, each
with the two stderr lines below added to the main.cpp of every program, and
built with ggml's own CMake:

    EX=/work/ext/ggml-examples
    git clone ggml EX/ggml-2a75bd43 && git -C ... checkout 2a75bd43113702fe096c75408b300d106be90a58
    git clone ggml EX/ggml-d5c4ce0b && git -C ... checkout d5c4ce0b45accdf828917b42fabfe7fc7d45364f
    make_ggml_example_refs.py patch EX/ggml-*/examples/{gpt-2,starcoder,mpt,gpt-neox,gpt-j}/main.cpp
    cmake -S EX/ggml-XXXXXXXX -B EX/build-XXXXXXXX -DCMAKE_BUILD_TYPE=Release -DGGML_BUILD_TESTS=OFF
    nice cmake --build EX/build-XXXXXXXX -j2 --target gpt-2 gpt-2-quantize starcoder \
        starcoder-quantize mpt mpt-quantize gpt-neox gpt-neox-quantize gpt-j gpt-j-quantize

The patch (PATCH_TOK, PATCH_GAP below) adds, and changes nothing else:
  - after `printf("%s", vocab.id_to_token[id].c_str());` (every prompt and
    generated token the program prints): fprintf(stderr, "tok %d\\n", id);
  - after the `id = gpt_sample_top_k_top_p*(vocab, LOGITS, ...)` call: a
    loop over the n_vocab logits at LOGITS that prints the gap between the
    largest and the second largest to stderr as "gap %.9g".

Then the KV probe (see kv_f16_dev) and the references (the test binary's
--write mode writes the f32 files and tensorport's own quantized bytes
from a recipe; --refs is rewritten in place):

    make_ggml_example_refs.py kvprobe --ex EX --out EX/kvprobe
    make_ggml_example_refs.py regen --ex EX --kvprobe EX/kvprobe \
        --test build/tests/model/test_arch_legacy_example \
        --refs tests/model/data/ggml_example_refs.json [--only RECIPE,...]

and, to find recipes (prints one line per seed: the f32 runs' kept
steps, distinct ids and smallest gap, then how many quantized runs the
floors keep; --refs is only read):

    make_ggml_example_refs.py search --ex EX --kvprobe EX/kvprobe --test ... --refs ... \
        --recipe gpt2 --synth '--arch gpt2 ... --seed {seed} --out-gain 8 --norm-noise 0.5' \
        --seeds 1011,2011,3011 --quantized --max-ok 4

`regen` writes each f32 file (test_arch_legacy_example --write NAME FILE
REFS), quantizes it with the commit's PROGRAM-quantize FILE OUT FTYPE,
records `bytes`, `fnv1a64` and `patch` (every byte where the program's
quantizer, whose x*id + 8.5f / + 16.5f gcc fuses into an FMA, differs from
tensorport's --write), runs

    PROGRAM -m FILE -p PROMPT -n N --top_k 1 --top_p 1.0 --temp 1.0 -s 1 -t 1

(plus --repeat-penalty 1.0 for mpt at d5c4ce0b) and records prompt ids,
generated ids, the printed text and the per-step gaps. The floors are the
JSON's `can_fail`: f32 runs must keep every step's gap at or above
`min_gap_f32` and `min_gap_over_kv_f16_dev` times the file's kv_f16_dev
and have `min_distinct` distinct ids, or the recipe is refused; a quantized run is cut before its first step below
`min_gap_quantized` (run again with -n K, so ids, text and gaps are the
program's for K steps) and dropped if it then has fewer than
`min_distinct` distinct ids.
"""
import argparse
import json
import os
import re
import subprocess
import sys

COMMITS = {"2a75bd43113702fe096c75408b300d106be90a58": "2a75bd43",
           "d5c4ce0b45accdf828917b42fabfe7fc7d45364f": "d5c4ce0b"}
PROMPTS = ["Hello world, this is a test of 123 tokens.",
           "The quick brown fox jumps over the lazy dog's tail; tensorport reads ggml files!"]
# the KV cache type of each main.cpp (memory_k/memory_v), at both commits
KV = {"gpt-2": "f32", "starcoder": "f32", "mpt": "f16", "gpt-neox": "f16", "gpt-j": "f16"}
# the second prompt at 2a75bd43 (README.md: the test feeds the program's ids and expects its own to differ)
TOKENIZER_DIFFERS = ("gpt_tokenize of ggml@2a75bd43 also emits the one-byte token after every longest match that does "
                     "not end the word, skipping that byte (fixed in ggml@8b3a7210)")
PATCH_TOK = 'fprintf(stderr, "tok %d\\n", id);'
PATCH_GAP = ('{ const float * lg_ = LOGITS; int nv_ = model.hparams.n_vocab; float a_ = -INFINITY, '
             'b_ = -INFINITY; for (int q_ = 0; q_ < nv_; q_++) { if (lg_[q_] > a_) { b_ = a_; a_ = lg_[q_]; } '
             'else if (lg_[q_] > b_) { b_ = lg_[q_]; } } fprintf(stderr, "gap %.9g\\n", (double) (a_ - b_)); }')


def patch(paths):
    for path in paths:
        src = open(path).read()
        if "tok %d" in src:
            continue
        out = []
        for ln in src.split("\n"):
            out.append(ln)
            m = re.match(r"(\s*)id = gpt_sample_top_k_top_p\w*\(vocab, (logits\.data\(\) \+ \(logits\.size\(\) - [\w.]+\))",
                         ln)
            if m:
                out.append(m.group(1) + PATCH_GAP.replace("LOGITS", m.group(2)))
            if re.match(r'\s*printf\("%s", vocab\.id_to_token\[id\]\.c_str\(\)\);', ln):
                out.append(re.match(r"(\s*)", ln).group(1) + PATCH_TOK)
        new = "\n".join(out)
        assert new.count("tok %d") == 1 and new.count("gap %.9g") == 1, path
        if "<cmath>" not in new and "math.h" not in new:
            new = "#include <cmath>\n" + new
        open(path, "w").write(new)
        print("patched", path)


def fnv1a64(data):
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def fnv1a64_file(path, work):
    """FNV-1a 64 of a file, with a throwaway C helper when a compiler is there (Python takes 10 s a file)."""
    exe = os.path.join(work, "fnv1a64")
    if not os.path.exists(exe):
        src = exe + ".c"
        open(src, "w").write(
            "#include <stdio.h>\n#include <stdint.h>\nint main(int c, char **v) { FILE *f = fopen(v[1], \"rb\");"
            " uint64_t h = 14695981039346656037ull; int b; if (!f) return 1;"
            " while ((b = getc(f)) != EOF) h = (h ^ (uint64_t)b) * 1099511628211ull;"
            " printf(\"%016llx\\n\", (unsigned long long)h); return 0; }\n")
        if subprocess.run(["cc", "-O2", "-o", exe, src]).returncode != 0:
            return fnv1a64(open(path, "rb").read())
    return subprocess.run([exe, path], capture_output=True, check=True, text=True).stdout.strip()


class Ctx:
    def __init__(self, a):
        self.ex, self.test, self.refs_path = a.ex, a.test, a.refs
        self.work, self.kvprobe = a.work, a.kvprobe
        os.makedirs(self.work, exist_ok=True)

    def bin(self, commit, prog):
        return os.path.join(self.ex, "build-" + COMMITS[commit], "bin", prog)


def write_file(ctx, refs_path, name, out):
    subprocess.run([ctx.test, "--write", name, out, refs_path], check=True)


def run_program(ctx, commit, program, path, prompt, n):
    args = [ctx.bin(commit, program), "-m", path, "-p", prompt, "-n", str(n), "--top_k", "1", "--top_p", "1.0",
            "--temp", "1.0", "-s", "1", "-t", "1"]
    if program == "mpt" and commit.startswith("d5c4ce0b"):
        args += ["--repeat-penalty", "1.0"]
    p = subprocess.run(args, capture_output=True, cwd=os.path.dirname(path))
    if p.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(args), p.stderr[-2000:]))
    toks = [int(x) for x in re.findall(rb"^tok (-?\d+)$", p.stderr, re.M)]
    gaps = [float(x) for x in re.findall(rb"^gap (\S+)$", p.stderr, re.M)]
    ng = len(gaps)
    prompt_ids, ids = toks[:len(toks) - ng], toks[len(toks) - ng:]
    out = p.stdout
    k = out.index(b"number of tokens in prompt = ")
    k = out.index(b"\n", k) + 1
    while out.startswith(b"main: token[", k):
        k = out.index(b"\n", k) + 1
    while out[k:k + 1] == b"\n":
        k += 1
    # the timing report: "\n\n" then "main: mem per token" (mpt at d5c4ce0b: "\n\n\n", "main: sampled tokens")
    end = out.rindex(b"\n\n\nmain: sampled tokens" if program == "mpt" and commit.startswith("d5c4ce0b")
                     else b"\n\nmain: mem per token")
    cmd = "%s -m %s -p '%s' -n %d --top_k 1 --top_p 1.0 --temp 1.0 -s 1 -t 1" % (
        program, os.path.basename(path), prompt, n)
    if program == "mpt" and commit.startswith("d5c4ce0b"):
        cmd += " --repeat-penalty 1.0"
    return {"command": cmd, "prompt_ids": prompt_ids, "ids": ids, "text_hex": out[k:end].hex(), "gaps": gaps}


def kv_f16_dev(ctx, program, path):
    """Largest logit change, over both prompts' 16 steps, when the program's KV cache is f16 instead of f32.

    Needs the probe builds (--kvprobe DIR: DIR/PROGRAM is ggml@d5c4ce0b's patched main.cpp with the
    memory_k/memory_v type read from $KV, f16 or f32, and the logits of every step appended to $DUMP,
    see kvprobe_source); the two runs must pick the same ids."""
    import array
    worst = 0.0
    for prompt in PROMPTS:
        logits, ids = {}, {}
        for kv in ("f16", "f32"):
            dump = path + ".logits"
            if os.path.exists(dump):
                os.unlink(dump)
            args = [os.path.join(ctx.kvprobe, program), "-m", path, "-p", prompt, "-n", "16", "--top_k", "1",
                    "--top_p", "1.0", "--temp", "1.0", "-s", "1", "-t", "1"]
            if program == "mpt":
                args += ["--repeat-penalty", "1.0"]
            p = subprocess.run(args, capture_output=True, env=dict(os.environ, KV=kv, DUMP=dump), check=True)
            ids[kv] = re.findall(rb"^tok (-?\d+)$", p.stderr, re.M)
            logits[kv] = array.array("f", open(dump, "rb").read())
            os.unlink(dump)
        if ids["f16"] != ids["f32"]:
            return float("inf")
        worst = max(worst, max(abs(a - b) for a, b in zip(logits["f16"], logits["f32"])))
    return worst


def kvprobe_source(src, out):
    """The probe's main.cpp from a patched one: KV type from $KV, every step's logits appended to $DUMP."""
    s = open(src).read()
    lines = []
    for ln in s.split("\n"):
        if ("memory_k" in ln or "memory_v" in ln) and ("new_tensor_1d" in ln or "sizef" in ln):
            ln = re.sub(r"GGML_TYPE_F(16|32)", "kvprobe_type()", ln)
        ln = ln.replace('fprintf(stderr, "gap %.9g\\n", (double) (a_ - b_)); }',
                        'fprintf(stderr, "gap %.9g\\n", (double) (a_ - b_)); if (getenv("DUMP")) { FILE * df_ = '
                        'fopen(getenv("DUMP"), "ab"); fwrite(lg_, sizeof(float), nv_, df_); fclose(df_); } }')
        lines.append(ln)
    s = "\n".join(lines)
    assert s.count("kvprobe_type()") >= 2 and "DUMP" in s, src
    open(out, "w").write('#include <cstdlib>\n#include <cstring>\n#include "ggml/ggml.h"\nstatic ggml_type '
                         'kvprobe_type() { const char * s = getenv("KV"); if (!s) abort(); return strcmp(s, "f16") ? '
                         'GGML_TYPE_F32 : GGML_TYPE_F16; }\n' + s)


def g4(x):
    return float("%.4g" % x)


def commits_of(entry):
    name = entry["name"]
    if name.endswith("-qnt1"):
        return ["2a75bd43113702fe096c75408b300d106be90a58"]
    if name.endswith("-qnt2"):
        return ["d5c4ce0b45accdf828917b42fabfe7fc7d45364f"]
    return list(COMMITS)


def make_file(ctx, refs_path, refs, entry, f32_paths):
    """Writes entry's file as the program ran on it; returns its path and patch list."""
    name = entry["name"]
    path = os.path.join(ctx.work, name + ".bin")
    if entry["quant"] is None:
        write_file(ctx, refs_path, name, path)
        f32_paths[entry["arch_ref"]] = path
        return path, []
    commit = commits_of(entry)[0]
    src = f32_paths[entry["arch_ref"]]
    q = subprocess.run([ctx.bin(commit, entry["program"] + "-quantize"), src, path, str(entry["ftype"] % 1000)],
                       capture_output=True)
    if q.returncode != 0:
        raise RuntimeError("quantize %s failed: %s" % (name, q.stderr[-2000:]))
    mine = path + ".tport"
    write_file(ctx, refs_path, name, mine)
    a, b = open(mine, "rb").read(), open(path, "rb").read()
    os.unlink(mine)
    if len(a) != len(b):
        raise RuntimeError("%s: tensorport wrote %d bytes, the quantize tool %d" % (name, len(a), len(b)))
    diff = [[i, a[i], b[i]] for i in range(len(a)) if a[i] != b[i]] if a != b else []
    if len(diff) > 16:
        raise RuntimeError("%s: %d bytes differ from the quantize tool's" % (name, len(diff)))
    return path, diff


def do_runs(ctx, entry, path, floors, dev=0.0):
    quantized = entry["quant"] is not None
    floor = floors["min_gap_quantized"] if quantized else max(floors["min_gap_f32"],
                                                                floors["min_gap_over_kv_f16_dev"] * dev)
    runs, report, f32_ok = [], [], True
    for commit in commits_of(entry):
        for prompt in PROMPTS:
            r = run_program(ctx, commit, entry["program"], path, prompt, 16)
            bad = [i for i, g in enumerate(r["gaps"]) if g < floor]
            n = bad[0] if bad else len(r["ids"])
            if quantized and n < len(r["ids"]) and n > 0:
                r = run_program(ctx, commit, entry["program"], path, prompt, n)
            ids = r["ids"][:n]
            ok = len(set(ids)) >= floors["min_distinct"]
            report.append((commit[:8], prompt[:5], n, len(set(ids)), min(r["gaps"][:n]) if n else None,
                           len(set(r["ids"])), min(r["gaps"]) if r["gaps"] else None))
            if not quantized and (bad or not ok):
                f32_ok = False
            if not ok:
                continue
            run = {"ggml": commit, "kv": KV[entry["program"]], "command": r["command"], "prompt_text": prompt,
                   "prompt_ids": r["prompt_ids"], "ids": ids, "text_hex": r["text_hex"],
                   "gaps": [g4(g) for g in r["gaps"][:n]]}
            if commit.startswith("2a75bd43") and prompt == PROMPTS[1]:
                run["tokenizer_differs"] = TOKENIZER_DIFFERS
            if entry["program"] == "mpt" and commit.startswith("d5c4ce0b"):
                run["text_form"] = "latin1-decoded"
            runs.append(run)
    return (runs if f32_ok else None), report


def dump(refs, path):
    with open(path, "w") as f:
        f.write('{"note": %s,\n' % json.dumps(refs["note"]))
        f.write(' "can_fail": %s,\n' % json.dumps(refs["can_fail"]))
        f.write(' "recipes": [\n' + ",\n".join("  " + json.dumps(r) for r in refs["recipes"]) + "\n ],\n")
        f.write(' "files": [\n')
        for i, e in enumerate(refs["files"]):
            head = {k: v for k, v in e.items() if k != "runs"}
            s = json.dumps(head)[:-1] + ', "runs": ['
            s += ",".join("\n   " + json.dumps(r) for r in e["runs"]) + "]}"
            f.write(" " + s + (",\n" if i + 1 < len(refs["files"]) else "\n"))
        f.write("]}\n")


def regen(ctx, a):
    refs = json.load(open(ctx.refs_path))
    only = set(a.only.split(",")) if a.only else None
    floors = refs["can_fail"]
    f32_paths = {}
    dev = 0.0
    for e in refs["files"]:
        if only and e["arch_ref"] not in only:
            continue
        path, diff = make_file(ctx, ctx.refs_path, refs, e, f32_paths)
        e["bytes"] = os.path.getsize(path)
        e["fnv1a64"] = fnv1a64_file(path, ctx.work)
        e.pop("patch", None)
        if diff:
            e["patch"] = diff
            # keep "runs" last
            e["runs"] = e.pop("runs")
        if e["quant"] is None:
            e.pop("kv_f16_dev", None)
            e["kv_f16_dev"] = g4(kv_f16_dev(ctx, e["program"], path))
            e["runs"] = e.pop("runs")
            dev = e["kv_f16_dev"]
        runs, report = do_runs(ctx, e, path, floors, dev)
        print(e["name"], e["bytes"], e["fnv1a64"], "patch" if diff else "", diff, report, flush=True)
        if runs is None:
            sys.exit("%s: the recipe fails the f32 floors" % e["name"])
        e["runs"] = runs
        dump(refs, ctx.refs_path)
        if e["quant"] is not None:
            os.unlink(path)


def search(ctx, a):
    refs = json.load(open(ctx.refs_path))
    floors = refs["can_fail"]
    n_ok = 0
    for seed in [int(s) for s in a.seeds.split(",")]:
        if n_ok >= a.max_ok:
            break
        synth = a.synth.replace("{seed}", str(seed))
        trial = json.loads(json.dumps(refs))
        for r in trial["recipes"]:
            if r["name"] == a.recipe:
                r["synth"] = synth
        tpath = os.path.join(ctx.work, "trial-%s.json" % a.recipe)
        json.dump(trial, open(tpath, "w"))
        entries = [e for e in trial["files"] if e["arch_ref"] == a.recipe]
        f32_paths = {}
        path, _ = make_file(ctx, tpath, trial, entries[0], f32_paths)
        dev = kv_f16_dev(ctx, entries[0]["program"], path)
        runs, report = do_runs(ctx, entries[0], path, floors, dev)
        line = "%s | dev %.3g f32 %s" % (synth, dev, "ok" if runs is not None else "FAIL")
        # per run: steps kept, their distinct ids, their smallest gap; all 16 steps' distinct ids and gap
        line += " " + " ".join("%s/%s:%s,%s,%s;%s,%.3g" % (c[:2], p[:1], n, d, None if g is None else "%.3g" % g, d16, g16)
                               for c, p, n, d, g, d16, g16 in report)
        n_ok += runs is not None
        if runs is not None and a.quantized:
            kept = steps = dist = 0
            for e in entries[1:]:
                qpath, _ = make_file(ctx, tpath, trial, e, f32_paths)
                qr, rep = do_runs(ctx, e, qpath, floors)
                kept += len(qr)
                dist += sum(len(set(r["ids"])) for r in qr)
                steps += sum(len(r["ids"]) for r in qr)
                os.unlink(qpath)
            line += " | quantized runs kept %d, steps %d, distinct %d" % (kept, steps, dist)
        print(line, flush=True)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("patch")
    pp.add_argument("files", nargs="+")
    for name in ("regen", "search"):
        s = sub.add_parser(name)
        s.add_argument("--ex", required=True)
        s.add_argument("--test", required=True)
        s.add_argument("--refs", required=True)
        s.add_argument("--work", default="/tmp/ggml-example-refs")
        s.add_argument("--kvprobe", required=True, help="folder of the KV probe builds (kvprobe_source)")
        if name == "regen":
            s.add_argument("--only", default="")
        else:
            s.add_argument("--recipe", required=True)
            s.add_argument("--synth", required=True)
            s.add_argument("--seeds", required=True)
            s.add_argument("--quantized", action="store_true")
            s.add_argument("--max-ok", type=int, default=1000, help="stop after this many f32 recipes that pass")
    kp = sub.add_parser("kvprobe")
    kp.add_argument("--ex", required=True)
    kp.add_argument("--out", required=True)
    a = p.parse_args()
    if a.cmd == "patch":
        patch(a.files)
        return
    if a.cmd == "kvprobe":  # after the d5c4ce0b build: its libraries, the probe's main.cpp
        os.makedirs(a.out, exist_ok=True)
        src, build = os.path.join(a.ex, "ggml-d5c4ce0b"), os.path.join(a.ex, "build-d5c4ce0b")
        for prog in ("gpt-2", "starcoder", "mpt", "gpt-neox", "gpt-j"):
            cpp = os.path.join(a.out, prog + ".cpp")
            kvprobe_source(os.path.join(src, "examples", prog, "main.cpp"), cpp)
            subprocess.run(["nice", "g++", "-O3", "-std=c++11", "-march=native", "-I", src + "/include",
                            "-I", src + "/include/ggml", "-I", src + "/examples", cpp,
                            build + "/examples/libcommon-ggml.a", build + "/examples/libcommon.a",
                            build + "/src/libggml.a", "-pthread", "-o", os.path.join(a.out, prog)], check=True)
        return
    a.work = os.path.abspath(a.work)
    a.refs = os.path.abspath(a.refs)
    # the vocabularies of the recipes: ../shared beside the repository, as the tests find them
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    os.environ.setdefault("TPORT_SHARED_DIR", os.path.join(os.path.dirname(repo), "shared"))
    ctx = Ctx(a)
    (regen if a.cmd == "regen" else search)(ctx, a)


if __name__ == "__main__":
    main()
