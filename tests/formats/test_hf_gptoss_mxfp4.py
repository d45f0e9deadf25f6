#!/usr/bin/env python3
"""gpt-oss Hugging Face folders with MXFP4 experts, as OpenAI distributes
gpt-oss (gptoss_mxfp4_write.py writes a small random one), against what
llama.cpp makes of the same folder (tests/model/data/gptoss_mxfp4_refs.json,
made by make_gptoss_mxfp4_refs.py there: llama.cpp's convert_hf_to_gguf.py,
then llama.cpp's greedy ids on its GGUF):

  - `tport info FOLDER` says the experts were repacked at load;
  - `tport run FOLDER` gives llama.cpp's greedy ids (16 after 8 prompt ids),
    also from two shards with each *_blocks apart from its *_scales;
  - `tport convert FOLDER out.gguf` writes every expert tensor (MXFP4
    gate/up/down, their biases) byte for byte as the converter did;
  - hostile folders (blocks not [.., 16], blocks without scales, scales of
    the wrong K/32, a U8 tensor that is no MXFP4 part) are refused, naming
    the tensor and what is wrong.

Standard library only.  usage: test_hf_gptoss_mxfp4.py TPORT REFS.json
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WRITER = os.path.join(HERE, "gptoss_mxfp4_write.py")
HOSTILE = {
    "blocks-shape": "MXFP4 blocks must be U8 [n_expert, rows, K/32, 16]",
    "no-scales": "down_proj_blocks: MXFP4 blocks without their scales",
    "scales-length": "down_proj_scales: MXFP4 scales must be U8 [4, 64, 2]",
    "u8-elsewhere": "router.weight: dtype U8 is read only as MXFP4 blocks and scales",
}
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def tport(*args):
    return subprocess.run([TPORT] + list(args), capture_output=True, text=True)


def write(folder, hostile=None):
    cmd = [sys.executable, WRITER, folder] + (["--hostile", hostile] if hostile else [])
    subprocess.run(cmd, check=True)


def main():
    global TPORT
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    TPORT, refs_path = sys.argv[1:]
    with open(refs_path) as f:
        refs = json.load(f)
    ref = refs["llamacpp"]
    floors = refs["can_fail"]
    # the reference must be able to fail and be no coin toss
    check(len(set(ref["ids"])) >= floors["min_distinct"] and min(ref["gaps"]) >= floors["min_margin"],
          "reference: %d distinct ids, min margin %g" % (len(set(ref["ids"])), min(ref["gaps"])))
    work = tempfile.mkdtemp(prefix="tport-gptoss-mxfp4-")
    try:
        folder = os.path.join(work, "gptoss-mxfp4-hf")
        write(folder)
        info = tport("info", folder)
        check(info.returncode == 0 and "repacked into ggml MXFP4 blocks at load (lossless)" in info.stdout,
              "tport info names the repack: %s" % (info.stderr.strip() or "ok"))
        run = tport("run", "-m", folder, "--prompt-ids", ",".join(map(str, refs["prompt_ids"])), "-n",
                    str(len(ref["ids"])), "--temp", "0", "--ids", "--threads", "1")
        got = run.stdout.strip()
        want = ",".join(map(str, ref["ids"]))
        check(run.returncode == 0 and got == want, "tport run FOLDER: [%s], llama.cpp [%s] %s" %
              (got, want, run.stderr.strip()[-200:] if run.returncode else ""))
        # sharded, each *_blocks in another shard than its scales
        sharded = os.path.join(work, "gptoss-mxfp4-hf-sharded")
        write(sharded, "sharded")
        run = tport("run", "-m", sharded, "--prompt-ids", ",".join(map(str, refs["prompt_ids"])), "-n",
                    str(len(ref["ids"])), "--temp", "0", "--ids", "--threads", "1")
        check(run.returncode == 0 and run.stdout.strip() == want, "tport run SHARDED_FOLDER: [%s] %s" %
              (run.stdout.strip(), run.stderr.strip()[-200:] if run.returncode else ""))
        out = os.path.join(work, "out.gguf")
        conv = tport("convert", folder, out)
        check(conv.returncode == 0, "tport convert FOLDER: %s" % conv.stderr.strip()[-200:])
        js = tport("info", "--json", out)
        tensors = {t["name"]: t for t in json.loads(js.stdout)["tensors"]} if js.returncode == 0 else {}
        with open(out, "rb") as f:
            data = f.read() if tensors else b""
        for name, want_t in sorted(refs["expert_tensors"].items()):
            t = tensors.get(name)
            if not t:
                check(False, "%s: not in the converted file" % name)
                continue
            sha = hashlib.sha256(data[t["offset"]:t["offset"] + t["bytes"]]).hexdigest()
            check(t["type"].lower() == want_t["type"].lower() and t["shape"] == want_t["ne"] and
                  sha == want_t["sha256"], "%s: %s %s as the converter's (%s %s)%s" %
                  (name, t["type"], t["shape"], want_t["type"], want_t["ne"],
                   "" if sha == want_t["sha256"] else ", bytes differ"))
        # llama.cpp itself on tport's GGUF, where its greedy tool is at hand
        # (tests/model/data/llamacpp_greedy.cpp; not in CI)
        greedy = os.environ.get("TPORT_LLAMACPP_GREEDY")
        if greedy and os.access(greedy, os.X_OK) and conv.returncode == 0:
            g = subprocess.run([greedy, out, str(len(ref["ids"])), "ids"] + [str(i) for i in refs["prompt_ids"]],
                               capture_output=True, text=True)
            ids = json.loads(g.stdout)["ids"] if g.returncode == 0 else None
            check(ids == ref["ids"], "llama.cpp on tport's GGUF: %s" % ids)
        else:
            print("skipped: llama.cpp on tport's GGUF (TPORT_LLAMACPP_GREEDY, with LLAMA_BINS, unset)")
        for case, msg in sorted(HOSTILE.items()):
            h = os.path.join(work, "hostile-" + case)
            write(h, case)
            r = tport("info", h)
            check(r.returncode != 0 and msg in r.stderr, "hostile %s refused with '%s': %s" %
                  (case, msg, r.stderr.strip() or "accepted"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("test_hf_gptoss_mxfp4: %s" % ("%d failures" % len(failures) if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
