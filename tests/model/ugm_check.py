#!/usr/bin/env python3
"""`tport tokenize` on Unigram (T5/UGM) vocabularies against llama.cpp.

ugm_vocab.py trains the SentencePiece model again (it must be the one the
references were made with: the digest of its pieces and scores is
compared), then every text is tokenized by `tport tokenize` on
  - the GGUF files it writes (t5.gguf, ws.gguf) and ../shared's
    ggml-vocab-nomic-bert-moe.gguf (XLM-RoBERTa's real Unigram vocabulary,
    250048 pieces), each against llama.cpp's ids in
    data/tokenizer_ugm_refs.json;
  - the Hugging Face folders it writes (tokenizer.json of every shape
    transformers wrote) and an XLM-R tokenizer.json made from the real
    vocabulary, against the ids of the GGUF of the same model;
and SentencePiece's own ids must equal the recorded ones where it agrees
with llama.cpp.  Then tokenizer.json settings llama.cpp's UGM cannot
follow, and malformed charsmaps, must be refused, naming what.

usage: ugm_check.py TPORT REFS_JSON SHARED_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ugm_vocab  # noqa: E402

failures = 0
checks = 0


def check(ok, msg):
    global failures, checks
    checks += 1
    if not ok:
        failures += 1
        print("FAIL:", msg)


def tokenize(tport, model, text_file, add_special):
    cmd = [tport, "tokenize", "-m", model, "-f", text_file]
    if not add_special:
        cmd.append("--no-add-special")
    r = subprocess.run(cmd, capture_output=True)
    if r.returncode != 0:
        return None, r.stderr.decode("utf-8", "replace").strip()
    line = r.stdout.decode().strip()
    return [int(x) for x in line.split(",") if x != ""], ""


def check_model(tport, what, model, ref, out):
    n = 0
    for i, case in enumerate(ref["cases"]):
        text_file = os.path.join(out, "text%02d.txt" % i)
        ids, err = tokenize(tport, model, text_file, False)
        if case["ids"] is None:  # no reference (invalid UTF-8): it must still tokenize
            check(ids is not None, "%s: text %d: %s" % (what, i, err))
            continue
        check(ids == case["ids"], "%s: %r\n  llama.cpp: %s\n  tport:     %s %s" % (what, case["text"], case["ids"], ids, err))
        n += 1
    # add_special: BOS/EOS as llama.cpp's flags say
    case = ref["cases"][3]
    ids, err = tokenize(tport, model, os.path.join(out, "text03.txt"), True)
    want = ([ref["bos"]] if ref["add_bos"] else []) + case["ids"] + ([ref["eos"]] if ref["add_eos"] else [])
    check(ids == want, "%s: add_special: want %s, got %s %s" % (what, want, ids, err))
    print("%s: %d texts tokenized as llama.cpp does" % (what, n))


def refused(tport, model, text_file, words, what):
    ids, err = tokenize(tport, model, text_file, False)
    check(ids is None and all(w in err for w in words),
          "%s: must be refused naming %s; got ids %s, message '%s'" % (what, words, ids, err))


def hostile(tport, out):
    text = os.path.join(out, "text03.txt")
    base = os.path.join(out, "hf-t5")
    with open(os.path.join(base, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    variants = [
        ("prepend_scheme first", lambda t: t["pre_tokenizer"].update(prepend_scheme="first"), ["first"]),
        ("byte_fallback", lambda t: t["model"].update(byte_fallback=True), ["byte_fallback"]),
        ("Lowercase normalizer",
         lambda t: t["normalizer"]["normalizers"].insert(1, {"type": "Lowercase"}), ["Lowercase"]),
        ("NFKC normalizer", lambda t: t.update(normalizer={"type": "NFKC"}), ["NFKC"]),
        ("ByteLevel pre-tokenizer", lambda t: t.update(pre_tokenizer={"type": "ByteLevel"}), ["ByteLevel"]),
        ("no pre-tokenizer", lambda t: t.update(pre_tokenizer=None), ["Metaspace"]),
        ("Metaspace replacement", lambda t: t["pre_tokenizer"].update(replacement="_"), ["'_'"]),
        ("bad base64", lambda t: t["normalizer"]["normalizers"][0].update(precompiled_charsmap="@@@@"),
         ["base64"]),
        ("no unk_id", lambda t: t["model"].pop("unk_id"), ["unk_id"]),
        ("vocab entry", lambda t: t["model"]["vocab"].append(["x"]), ["[piece, score]"]),
    ]
    for what, change, words in variants:
        d = os.path.join(out, "bad-" + what.replace(" ", "-"))
        shutil.copytree(base, d)
        t = json.loads(json.dumps(tok))
        change(t)
        with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(t, f, ensure_ascii=False)
        refused(tport, d, text, words, "tokenizer.json with " + what)
    # malformed charsmaps in a GGUF
    sp = ugm_vocab.spm.SentencePieceProcessor(model_file=os.path.join(out, "spm.model"))
    tokens = [sp.IdToPiece(i).encode() for i in range(sp.vocab_size())]
    scores = [sp.GetScore(i) for i in range(sp.vocab_size())]
    types = [2 if sp.IsUnknown(i) else 3 if sp.IsControl(i) else 1 for i in range(sp.vocab_size())]
    cm = open(os.path.join(out, "charsmap.bin"), "rb").read()
    blob = int.from_bytes(cm[:4], "little")
    cases = [
        ("a charsmap of 3 bytes", b"\x01\x02\x03", True, ["precompiled_charsmap", "too small"]),
        ("a double array past the end", (len(cm)).to_bytes(4, "little") + cm[4:], True,
         ["precompiled_charsmap", "runs past"]),
        # every unit a child of everything, pointing far away: the walk leaves the array
        ("units pointing past the array", blob.to_bytes(4, "little") + b"\xff\xff\xff\x7f" * (blob // 4) +
         b"x\0", False, ["precompiled_charsmap", "malformed"]),
        # replacements cut: the first match's string has no NUL
        ("replacements without NUL", cm[:4 + blob] + cm[4 + blob:].replace(b"\0", b"?"), False,
         ["precompiled_charsmap", "malformed"]),
    ]
    for what, data, at_load, words in cases:
        path = os.path.join(out, "bad-%d.gguf" % len(data))
        ugm_vocab.write_gguf(path, tokens, scores, types, True, True, data)
        fancy = os.path.join(out, "text11.txt")  # full-width letters: the charsmap is walked and matches
        refused(tport, path, fancy if not at_load else text, words, "GGUF with " + what)


def main():
    tport, refs_path, shared = sys.argv[1:4]
    with open(refs_path, encoding="utf-8") as f:
        refs = json.load(f)
    out = tempfile.mkdtemp(prefix="ugm-")
    try:
        r = subprocess.run([sys.executable, os.path.join(HERE, "ugm_vocab.py"), out])
        if r.returncode != 0:
            print("FAIL: ugm_vocab.py could not make the vocabulary")
            return 1
        with open(os.path.join(out, "spm_ids.json")) as f:
            spm_ids = json.load(f)
        if spm_ids["pieces_sha256"] != refs["pieces_sha256"]:
            print("FAIL: SentencePiece %s trained another model than the references' (sentencepiece %s): "
                  "pieces digest %s, want %s; remake the references (data/README.md)"
                  % (spm_ids["sentencepiece"], refs["sentencepiece"], spm_ids["pieces_sha256"],
                     refs["pieces_sha256"]))
            return 1
        for name, ref in refs["vocabs"].items():
            model = ref["file"].replace("$SHARED", shared).replace("$OUT", out)
            if not os.path.exists(model):
                print("%s: skipped (no %s)" % (name, model))
                continue
            for i, case in enumerate(ref["cases"]):  # the texts are the ones the references saw
                with open(os.path.join(out, "text%02d.txt" % i), "rb") as f:
                    raw = f.read()
                check(case["ids"] is None or raw.decode("utf-8") == case["text"], "%s: text %d differs" % (name, i))
            check_model(tport, name, model, ref, out)
            if name in spm_ids["ids"]:
                n = 0
                for i, case in enumerate(ref["cases"]):
                    if case.get("spm"):
                        check(spm_ids["ids"][name][i] == case["ids"],
                              "%s: SentencePiece gives %s for %r, recorded %s" % (name, spm_ids["ids"][name][i],
                                                                                  case["text"], case["ids"]))
                        n += 1
                print("%s: SentencePiece gives the same ids for the %d texts where it agrees with llama.cpp" % (name, n))
        for folder, name in refs["folders"].items():
            check_model(tport, folder + " (tokenizer.json)", os.path.join(out, folder), refs["vocabs"][name], out)
        # XLM-R's tokenizer.json, made from the real vocabulary
        xlmr = refs["vocabs"]["nomic-bert-moe"]["file"].replace("$SHARED", shared)
        if os.path.exists(xlmr):
            folder = os.path.join(out, "hf-xlmr")
            ugm_vocab.xlmr_folder(xlmr, folder)
            check_model(tport, "hf-xlmr (tokenizer.json)", folder, refs["vocabs"]["nomic-bert-moe"], out)
            shutil.rmtree(folder, ignore_errors=True)
        # tport convert carries the keys (the charsmap as a u8 array) into a GGUF
        conv = os.path.join(out, "converted.gguf")
        r = subprocess.run([tport, "convert", os.path.join(out, "hf-t5"), conv, "--quiet"], capture_output=True)
        check(r.returncode == 0, "tport convert hf-t5: %s" % r.stderr.decode("utf-8", "replace"))
        if r.returncode == 0:
            check_model(tport, "hf-t5 converted to GGUF", conv, refs["vocabs"]["t5"], out)
        hostile(tport, out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print("%d passed, %d failed" % (checks - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
