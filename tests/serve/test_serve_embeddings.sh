#!/usr/bin/env bash
# POST /v1/embeddings: the answer's shape (OpenAI's), unit vectors, text and
# token-id inputs agreeing, base64 giving the same floats, the bad inputs
# answered 400 naming the field, and the vector llama.cpp pools for the
# same file (tests/model/data/embed_refs.json, normalised here) within
# rounding (the server's KV cache is f16, the reference's f32).
. "$(dirname "$0")/serve_lib.sh"
REFS="$(dirname "$0")/../model/data/embed_refs.json"

start_server --parallel 2 --ctx 256
emb() { http POST /v1/embeddings "$1"; }
expect_eq "text input" "$(emb '{"input":"Once upon a time","model":"x"}')" 200
expect_eq "answer shape" "$(jget '[j.object, j.data.length, j.data[0].object, j.data[0].index, j.data[0].embedding.length, j.usage.prompt_tokens, j.usage.total_tokens].join(" ")')" \
    "list 1 embedding 0 8 5 5"
NORM=$(jget 'Math.abs(Math.hypot(...j.data[0].embedding) - 1) < 1e-5')
expect_eq "a unit vector" "$NORM" true
cp "$WORK/body" "$WORK/text.json"
expect_eq "the same as token ids" "$(emb '{"input":[1,9038,2501,263,931]}')" 200
SAME=$(node -e 'const f = p => JSON.parse(require("fs").readFileSync(p, "utf8")).data[0].embedding;
  const a = f(process.argv[1]), b = f(process.argv[2]); console.log(a.every((x, i) => x === b[i]))' "$WORK/text.json" "$WORK/body")
expect_eq "text and its ids give the same vector" "$SAME" true
expect_eq "two inputs" "$(emb '{"input":["Once upon a time","Hello"]}')" 200
expect_eq "two answers, in order" "$(jget 'j.data.map(d => d.index).join(",") + " " + j.usage.prompt_tokens')" "0,1 7"
SAME=$(node -e 'const f = p => JSON.parse(require("fs").readFileSync(p, "utf8")).data[0].embedding;
  const a = f(process.argv[1]), b = f(process.argv[2]); console.log(a.every((x, i) => x === b[i]))' "$WORK/text.json" "$WORK/body")
expect_eq "the first of two is the one alone" "$SAME" true
expect_eq "lists of ids" "$(emb '{"input":[[1,9038],[1,15043]]}')" 200
expect_eq "base64" "$(emb '{"input":"Once upon a time","encoding_format":"base64"}')" 200
SAME=$(node -e 'const b = Buffer.from(JSON.parse(require("fs").readFileSync(process.argv[2], "utf8")).data[0].embedding, "base64");
  const f = new Float32Array(b.buffer, b.byteOffset, b.length / 4);
  const a = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).data[0].embedding;
  console.log(f.length === a.length && a.every((x, i) => Math.fround(x) === f[i]))' "$WORK/text.json" "$WORK/body")
expect_eq "base64 holds the same floats" "$SAME" true
expect_eq "dimensions = the width" "$(emb '{"input":"Hi","dimensions":8}')" 200

expect_eq "no input" "$(emb '{"model":"x"}')" 400
expect_eq "no input: names the field" "$(jget j.error.param)" input
expect_eq "an empty list" "$(emb '{"input":[]}')" 400
expect_eq "an empty string: BOS alone" "$(emb '{"input":""}')" 200
expect_eq "an empty string: one token" "$(jget j.usage.prompt_tokens)" 1
expect_eq "an id outside the vocabulary" "$(emb '{"input":[1,32000]}')" 400
expect_eq "a fractional id" "$(emb '{"input":[1,2.5]}')" 400
expect_eq "a bad encoding_format" "$(emb '{"input":"Hi","encoding_format":"hex"}')" 400
expect_eq "other dimensions" "$(emb '{"input":"Hi","dimensions":4}')" 400
expect_eq "not JSON" "$(emb 'nonsense')" 400
expect_eq "GET is not allowed" "$(http GET /v1/embeddings)" 405
stop_server

# llama.cpp's vector for the recorded file and ids, mean-pooled
RECIPE=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).models[0].synth)' "$REFS")
# shellcheck disable=SC2086
"$TPORT_CLI" synth $RECIPE -o "$WORK/ref.gguf" >/dev/null
check "synthesized the reference file" $?
MODEL="$WORK/ref.gguf"
for pooling in mean last cls; do
    start_server --pooling "$pooling" --ctx 128
    IDS=$(node -e 'console.log(JSON.stringify(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).models[0].runs[0].prompt_ids))' "$REFS")
    expect_eq "$pooling: the reference ids" "$(emb "{\"input\":$IDS}")" 200
    DIFF=$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).models[0].runs[0][process.argv[3]];
      const n = Math.hypot(...r), want = r.map(x => x / n);
      const got = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8")).data[0].embedding;
      console.log(got.length === want.length ? Math.max(...got.map((x, i) => Math.abs(x - want[i]))) : 1)' \
      "$REFS" "$WORK/body" "$pooling")
    echo "$pooling: max |diff| from llama.cpp's (normalised) $DIFF"
    node -e 'process.exit(Number(process.argv[1]) < 1e-3 ? 0 : 1)' "$DIFF"
    check "$pooling: llama.cpp's vector within 1e-3" $?
    stop_server
done
ERR=$("$TPORT_CLI" serve -m "$MODEL" --pooling rank 2>&1 >/dev/null); RC=$?
expect_eq "--pooling rank refused: status 2" "$RC ${ERR:0:38}" "2 tport: serve: unknown --pooling 'rank'"
finish
