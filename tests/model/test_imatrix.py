#!/usr/bin/env python3
"""tport imatrix against llama-imatrix (data/imatrix_refs.json, made by
data/make_imatrix_refs.py): for each recipe, the file `tport synth` writes
and the text data/perplexity_text.txt (repeated as the recipe says) --
 - the GGUF form: general.type, imatrix.chunk_count and .chunk_size equal,
   imatrix.datasets the text's path as given, the same weights (tensor
   names) with the same shapes, the same counts (per expert for expert
   stacks), and per matrix the sum of its in_sum2 row and the row weighted
   by column index + 1 within the recorded tolerance (relative);
 - the legacy .dat form (--output-format dat) says what the GGUF form says:
   per weight ncall = the chunks its largest count covers, rounded up, and
   each value the GGUF sum / count * ncall;
 - the GGUF file ends padded to its alignment (32), as ggml's reader needs
   (it reads the data section as the sum of the padded tensor sizes);
 - the final perplexity printed within 1e-4 of llama-imatrix's;
 - tport convert --imatrix takes both files (the llama recipe's);
 - where llama-imatrix is at hand ($LLAMA_IMATRIX, else
   /work/ext/bin/llama-imatrix; it runs in $LLAMA_BINS, else the
   node-llama-cpp bundle's folder) the same checks run against its files
   made now, and llama-imatrix --in-file reads both of tport's files.
  test_imatrix.py TPORT SHARED_DIR [--backend NAME --only RECIPE]
With --backend, tport imatrix runs on that backend (the weight products'
inputs then come back from its memory) against the recorded files only.
Exit 77 (skipped) when a vocabulary under SHARED_DIR is missing, or the
backend is not available (a failure under CI=true)."""
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "data"))
from imatrix_read import read_dat, read_gguf, summary  # noqa: E402
from make_imatrix_refs import text_file  # noqa: E402

BUNDLE = "/work/nlc/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def compare(got, want, tol, what):
    """Problems of summary got against summary want."""
    bad = []
    if sorted(got) != sorted(want):
        return ["%s: weights %s instead of %s" % (what, sorted(got), sorted(want))]
    for w, x in want.items():
        y = got[w]
        if y["shape"] != x["shape"] or y["counts"] != x["counts"]:
            bad.append("%s: %s: shape %s counts %s instead of %s %s" % (what, w, y["shape"], y["counts"],
                                                                        x["shape"], x["counts"]))
            continue
        for key in ("sums", "wsums"):
            for i, (a, b) in enumerate(zip(y[key], x[key])):
                if rel(a, b) > tol:
                    bad.append("%s: %s: %s[%d] %.7g instead of %.7g" % (what, w, key, i, a, b))
    return bad


def check_keys(keys, want, text, what):
    bad = []
    for k, v in want.items():
        if keys.get(k) != v:
            bad.append("%s: %s = %r instead of %r" % (what, k, keys.get(k), v))
    if keys.get("imatrix.datasets") != [text]:
        bad.append("%s: imatrix.datasets = %r" % (what, keys.get("imatrix.datasets")))
    return bad


def check_dat(dat, tensors, chunk_size, chunk_count, text, what):
    """The .dat form against the GGUF form of the same run."""
    entries, chunks, dataset = dat
    bad = []
    if chunks != chunk_count or dataset != text:
        bad.append("%s: chunks %d dataset %r" % (what, chunks, dataset))
    names = sorted(n[:-len(".in_sum2")] for n in tensors if n.endswith(".in_sum2"))
    if sorted(entries) != names:
        return bad + ["%s: entries %s instead of %s" % (what, sorted(entries), names)]
    for w in names:
        ncall, vals = entries[w]
        sums, counts = tensors[w + ".in_sum2"][1], tensors[w + ".counts"][1]
        if ncall != math.ceil(max(counts) / chunk_size):
            bad.append("%s: %s: ncall %d for counts %s" % (what, w, ncall, counts))
        per = len(sums) // len(counts)
        for i, (v, s) in enumerate(zip(vals, sums)):
            c = counts[i // per]
            want = (s / c if c else 1.0) * ncall
            if rel(v, want) > 1e-6:
                bad.append("%s: %s: value %d %.7g instead of %.7g" % (what, w, i, v, want))
                break
    return bad


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd[:2]), p.returncode, p.stderr[-2000:]))
    return p.stdout


def final_ppl(out):
    lines = [ln for ln in out.splitlines() if ln.startswith("Final estimate: PPL = ")]
    return float(lines[-1].split()[4]) if lines else None


def main():
    tport, shared = sys.argv[1], sys.argv[2]
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    backend, only = opts.get("--backend"), opts.get("--only")
    refs = json.load(open(os.path.join(HERE, "data", "imatrix_refs.json")))
    tol = refs["tolerance"]
    llama = os.environ.get("LLAMA_IMATRIX") or "/work/ext/bin/llama-imatrix"
    bins = os.environ.get("LLAMA_BINS") or BUNDLE
    live = os.access(llama, os.X_OK) and os.path.isdir(bins) and not backend
    if backend:
        listed = subprocess.run([tport, "backends"], capture_output=True, text=True).stdout
        active = next((ln for ln in listed.splitlines() if ln.startswith("active, in preference order:")), "")
        if backend not in active.split(":")[-1].split():
            print("skipped: backend %s is not available" % backend)
            return 1 if os.environ.get("CI") == "true" else 77
    ran = 0
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        for r in refs["recipes"]:
            if only and r["name"] != only:
                continue
            ran += 1
            vocab = os.path.join(shared, r["vocab"])
            if not os.path.isfile(vocab):
                print("skipped: %s (%s missing)" % (r["name"], vocab))
                return 77
            model = os.path.join(tmp, "m.gguf")
            p = {f: os.path.join(tmp, f) for f in ("t.gguf", "t.dat", "l.gguf", "l.dat", "q.gguf")}
            text = text_file(tmp, r["repeat"])
            args = ["-f", text, "-c", str(r["ctx"]), "-t", "1"] + (["--chunks", str(r["chunks"])] if r["chunks"] else [])
            if r["from_chunk"]:
                args += ["--chunk", str(r["from_chunk"])]
            targs = args + (["--backend", backend] if backend else [])
            bad = []
            try:
                run([tport, "synth"] + r["synth"].split() + ["--vocab-from", vocab, "-o", model])
                out = run([tport, "imatrix", "-m", model, "-o", p["t.gguf"]] + targs)
                ppl = final_ppl(out)
                if ppl is None or rel(ppl, r["ppl"]) > 1e-4:
                    bad.append("tport: final PPL %s instead of %.4f" % (ppl, r["ppl"]))
                run([tport, "imatrix", "-m", model, "-o", p["t.dat"], "--output-format", "dat", "--no-ppl"] + targs)
                keys, tensors = read_gguf(p["t.gguf"])
                if os.path.getsize(p["t.gguf"]) % 32:
                    bad.append("tport: the GGUF file's %d bytes are not padded to 32" % os.path.getsize(p["t.gguf"]))
                bad += check_keys(keys, r["keys"], text, "tport")
                bad += compare(summary(tensors), r["entries"], tol, "tport vs recorded")
                size, count = r["keys"]["imatrix.chunk_size"], r["keys"]["imatrix.chunk_count"]
                bad += check_dat(read_dat(p["t.dat"]), tensors, size, count, text, "tport .dat")
                for f in ("t.gguf", "t.dat") if r["name"] == "llama" else ():  # (once: it takes a while)
                    run([tport, "convert", model, p["q.gguf"], "--type", "Q4_K_M", "--imatrix", p[f], "--quiet"])
                if live:
                    run([llama, "-m", model, "-o", p["l.gguf"]] + args, cwd=bins)
                    run([llama, "-m", model, "-o", p["l.dat"], "--output-format", "dat"] + args, cwd=bins)
                    lkeys, ltensors = read_gguf(p["l.gguf"])
                    bad += check_keys(lkeys, r["keys"], text, "llama-imatrix now")
                    bad += compare(summary(tensors), summary(ltensors), tol, "tport vs llama-imatrix now")
                    bad += check_dat(read_dat(p["l.dat"]), ltensors, size, count, text, "llama-imatrix .dat")
                    for f in ("t.gguf", "t.dat"):
                        run([llama, "-m", model, "--in-file", p[f], "--show-statistics"], cwd=bins)
                    le, lc, ld = read_dat(p["l.dat"])
                    te, tc, td = read_dat(p["t.dat"])
                    if sorted(le) != sorted(te) or (lc, ld) != (tc, td):
                        bad.append("dat: entries or trailer differ from llama-imatrix's")
                    else:
                        for w in le:
                            if le[w][0] != te[w][0]:
                                bad.append("dat: %s: ncall %d instead of %d" % (w, te[w][0], le[w][0]))
            except RuntimeError as e:
                bad.append(str(e))
            if bad:
                fails += 1
                print("FAIL: %s:\n  %s" % (r["name"], "\n  ".join(bad[:20])))
            else:
                print("ok: %s (%d weights, %d chunks%s%s)" % (r["name"], len(r["entries"]),
                                                            r["keys"]["imatrix.chunk_count"],
                                                            ", on " + backend if backend else "",
                                                            ", and llama-imatrix now" if live else ""))
    print("%d recipes, %d failed" % (ran, fails))
    return 1 if fails or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
