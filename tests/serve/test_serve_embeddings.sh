#!/usr/bin/env bash
# POST /v1/embeddings: OpenAI's shapes (a string, strings, token ids, lists
# of them; float and base64), usage.prompt_tokens, embd_normalize's norms
# against the raw vector, refusals naming the field; and the values
# against llama.cpp's (tests/model/data/embed_refs.json) for files
# `tport synth` regenerates from its recipes.
. "$(dirname "$0")/serve_lib.sh"
REFS="$(dirname "$0")/../model/data/embed_refs.json"

# ---- values: ids in, llama.cpp's pooled and normalised embedding out
BGE="${TPORT_SHARED_DIR:-../shared}/models/vocab/ggml-vocab-bert-bge.gguf"
for name in llama-last llama-mean bert-mean; do
    recipe=$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
                      console.log(r.entries.find(e => e.name === process.argv[2]).synth)' "$REFS" "$name")
    if [ "$name" = bert-mean ]; then
        [ -f "$BGE" ] || { echo "skipped: bert-mean ($BGE is absent)"; continue; }
        recipe="$recipe --vocab-from $BGE"
    fi
    # shellcheck disable=SC2086
    "$TPORT_CLI" synth $recipe -o "$WORK/$name.gguf" >/dev/null
    check "$name: synth" $?
    MODEL="$WORK/$name.gguf" start_server --ctx 128
    ids=$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
                   console.log(JSON.stringify(r.entries.find(e => e.name === process.argv[2]).llamacpp.prompt_ids))' \
          "$REFS" "$name")
    expect_eq "$name: 200" "$(http POST /v1/embeddings "{\"input\":$ids}")" 200
    # the server's KV cache is f16 (llama-server's default too), the
    # reference's f32: components move by up to 1.3e-4 (measured), so
    # 5e-4 here; test_embed holds the library to 5e-5 with an f32 cache
    expect_eq "$name: = llama.cpp (cosine > 0.9999, |diff| < 5e-4)" "$(node -e '
        const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const r = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8")).entries
                  .find(e => e.name === process.argv[3]).llamacpp;
        const a = j.data[0].embedding, b = r.embedding;
        let ab = 0, aa = 0, bb = 0, d = 0;
        a.forEach((x, i) => { ab += x * b[i]; aa += x * x; bb += b[i] * b[i]; d = Math.max(d, Math.abs(x - b[i])); });
        const ok = a.length === b.length && ab / Math.sqrt(aa * bb) > 0.9999 && d < 5e-4 &&
                   j.usage.prompt_tokens === r.prompt_ids.length;
        console.log(ok ? "ok" : `cos ${ab / Math.sqrt(aa * bb)} diff ${d} n ${a.length}`)' \
        "$WORK/body" "$REFS" "$name")" ok
    if [ "$name" = bert-mean ]; then
        # WordPiece with [CLS] ... [SEP]; an encoder refuses completions
        expect_eq "bert: text: 200" "$(http POST /v1/embeddings '{"input":"Hello world"}')" 200
        expect_eq "bert: [CLS] hello world [SEP]" "$(jget 'j.usage.prompt_tokens')" 4
        expect_eq "bert: completions: 400" "$(http POST /v1/completions '{"prompt":"Hello","max_tokens":2}')" 400
        grep -q encoder "$WORK/body"
        check "bert: the refusal says it is an encoder" $?
    fi
    stop_server
done

# ---- shapes, on the shared tiny llama (no pooling key: last token)
start_server --ctx 256
COMPLETE='{"prompt":"Once upon a time","max_tokens":8,"temperature":0}'
http POST /v1/completions "$COMPLETE" >/dev/null
BEFORE=$(jget 'j.choices[0].text')
expect_eq "a string: 200" "$(http POST /v1/embeddings '{"input":"Once upon a time","model":"x"}')" 200
cp "$WORK/body" "$WORK/one"
expect_eq "object list, one embedding, unit norm, usage" "$(jget '
    j.object === "list" && j.data.length === 1 && j.data[0].object === "embedding" && j.data[0].index === 0 &&
    Math.abs(Math.hypot(...j.data[0].embedding) - 1) < 1e-5 && j.usage.prompt_tokens > 1 &&
    j.usage.total_tokens === j.usage.prompt_tokens && typeof j.model === "string"')" true
http POST /tokenize '{"content":"Once upon a time"}' >/dev/null
# the text with BOS (the tokenizer's default) equals its ids with BOS
http POST /v1/embeddings "{\"input\":[1,$(jget 'j.tokens.join(",")')]}" >/dev/null
expect_eq "text = its token ids (with BOS)" "$(node -e '
    const f = p => JSON.parse(require("fs").readFileSync(p, "utf8")).data[0].embedding;
    const a = f(process.argv[1]), b = f(process.argv[2]);
    console.log(a.every((x, i) => Math.abs(x - b[i]) < 1e-6))' "$WORK/one" "$WORK/body")" true
expect_eq "two strings: 200" "$(http POST /v1/embeddings '{"input":["Once upon a time","Hello"]}')" 200
expect_eq "two embeddings in order, the first the same, the second different" "$(node -e '
    const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const one = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8")).data[0].embedding;
    const [a, b] = j.data.map(d => d.embedding);
    console.log(j.data.length === 2 && j.data[1].index === 1 && a.every((x, i) => Math.abs(x - one[i]) < 1e-6) &&
                b.some((x, i) => Math.abs(x - a[i]) > 1e-3))' "$WORK/body" "$WORK/one")" true
expect_eq "token arrays: 200" "$(http POST /v1/embeddings '{"input":[[1,450,2],[1,15043]]}')" 200
expect_eq "token arrays: usage counts every token" "$(jget 'j.usage.prompt_tokens')" 5
expect_eq "base64: 200" "$(http POST /v1/embeddings '{"input":"Once upon a time","encoding_format":"base64"}')" 200
expect_eq "base64 = the little-endian floats" "$(node -e '
    const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const one = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8")).data[0].embedding;
    const buf = Buffer.from(j.data[0].embedding, "base64");
    const v = Array.from({length: buf.length / 4}, (_, i) => buf.readFloatLE(4 * i));
    console.log(v.length === one.length && v.every((x, i) => Math.abs(x - one[i]) < 1e-6))' \
    "$WORK/body" "$WORK/one")" true

# ---- embd_normalize (llama-server's field): each norm against the raw
# vector (-1) divided by that norm as computed here, in doubles
expect_eq "embd_normalize -1: 200" "$(http POST /v1/embeddings '{"input":"Once upon a time","embd_normalize":-1}')" 200
cp "$WORK/body" "$WORK/raw"
expect_eq "embd_normalize -1: not unit length" "$(jget 'Math.abs(Math.hypot(...j.data[0].embedding) - 1) > 1e-2')" true
for p in 0 1 2 3 7; do
    expect_eq "embd_normalize $p: 200" \
        "$(http POST /v1/embeddings "{\"input\":\"Once upon a time\",\"embd_normalize\":$p}")" 200
    expect_eq "embd_normalize $p = raw / its norm" "$(node -e '
        const f = q => JSON.parse(require("fs").readFileSync(q, "utf8")).data[0].embedding;
        const raw = f(process.argv[1]), got = f(process.argv[2]), p = Number(process.argv[3]);
        const a = raw.map(Math.abs);
        const norm = p === 0 ? Math.max(...a) / 32760 : Math.pow(a.reduce((s, x) => s + Math.pow(x, p), 0), 1 / p);
        const want = raw.map(x => x / norm);
        const ok = got.length === raw.length && got.every((x, i) => Math.abs(x - want[i]) <= 1e-6 * Math.max(1, Math.abs(want[i])));
        const top = Math.max(...got.map(Math.abs));
        console.log(ok && (p !== 0 || Math.abs(top - 32760) < 0.01) ? "ok" : `got ${got.slice(0, 4)} want ${want.slice(0, 4)}`)' \
        "$WORK/raw" "$WORK/body" "$p")" ok
done

# ---- refused with 400 naming the field
refused() { # refused NAME BODY PARAM
    expect_eq "$1: 400" "$(http POST /v1/embeddings "$2")" 400
    expect_eq "$1: param" "$(jget 'j.error.param')" "$3"
}
refused "no input" '{}' input
refused "empty list" '{"input":[]}' input
refused "a number" '{"input":5}' input
refused "a token outside the vocabulary" '{"input":[1,999999]}' input
refused "a mixed list" '{"input":["a",5]}' input
refused "dimensions" '{"input":"a","dimensions":8}' dimensions
refused "encoding_format" '{"input":"a","encoding_format":"int8"}' encoding_format
refused "embd_normalize -2" '{"input":"a","embd_normalize":-2}' embd_normalize
refused "embd_normalize 1.5" '{"input":"a","embd_normalize":1.5}' embd_normalize
refused "embd_normalize a string" '{"input":"a","embd_normalize":"2"}' embd_normalize
expect_eq "a body that is not JSON: 400" "$(http POST /v1/embeddings 'nope')" 400
expect_eq "GET: 405" "$(http GET /v1/embeddings)" 405
# generation on the slot an embedding used (its cache now holds the
# embedded tokens, reused as a prompt prefix) gives the same text
expect_eq "embedding the prompt: 200" "$(http POST /v1/embeddings '{"input":"Once upon a time"}')" 200
expect_eq "completion after embeddings: 200" "$(http POST /v1/completions "$COMPLETE")" 200
expect_eq "the same greedy text as before any embedding" "$(jget 'j.choices[0].text')" "$BEFORE"
finish
