#!/bin/sh
# Makes embed_refs.json: llama.cpp's pooled embeddings (llamacpp_embed.cpp,
# built as its header says) of files that `tport synth` regenerates from
# each entry's recipe.  test_embed_NAME compares tensorport's with them.
#   TPORT=build/tport LLAMACPP_EMBED=/tmp/llamacpp_embed \
#   LLAMA_BINS=.../bins/linux-x64 sh tests/model/data/make_embed_refs.sh
# An entry: name | synth recipe | llama.cpp's pooling argument ("file":
# the file's key; "last" for a decoder file without one, which tensorport
# pools by its last token) | the vocabulary (under ../shared) or empty.
# SHARED: the shared folder (default ../shared).
set -eu
out=$(dirname "$0")/embed_refs.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ids="1 17 42 99 123 256 311 400 5 77"
bert_ids="101 17 42 99 123 2256 3311 400 5 102" # [CLS] ... [SEP]
shared=${SHARED:-../shared}
{
    echo '{'
    echo ' "reference": "llama.cpp v0.4.0 (node-llama-cpp 3.21.1 prebuilt libllama.v0.4.0.so), CPU, 1 thread, f32 KV cache, flash attention off, the ids as one batch, embeddings = true; llama_get_embeddings_seq, divided by its Euclidean norm (embd_normalize 2); see llamacpp_embed.cpp",'
    echo ' "entries": ['
    first=1
    while IFS='|' read -r name recipe pooling vocab; do
        [ -n "$name" ] || continue
        if [ -n "$vocab" ]; then
            "$TPORT" synth $recipe --vocab-from "$shared/$vocab" -o "$tmp/$name.gguf" >/dev/null
            ref=$("$LLAMACPP_EMBED" "$tmp/$name.gguf" "$pooling" $bert_ids)
        else
            "$TPORT" synth $recipe -o "$tmp/$name.gguf" >/dev/null
            ref=$("$LLAMACPP_EMBED" "$tmp/$name.gguf" "$pooling" $ids)
        fi
        [ $first = 1 ] || echo '  ,'
        first=0
        printf '  {"name": "%s", "synth": "%s", "vocab_from": "%s", "llamacpp_pooling": "%s", "llamacpp": %s}\n' \
            "$name" "$recipe" "$vocab" "$pooling" "$ref"
    done <<'LIST'
llama-last|--arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --vocab 512 --ctx 128 --seed 7101 --out-gain 4 --norm-noise 0.5|last
llama-mean|--arch llama --dim 64 --layers 2 --heads 4 --ff 128 --vocab 512 --ctx 128 --seed 7102 --out-gain 4 --norm-noise 0.5 --pooling mean|file
llama-cls|--arch llama --dim 64 --layers 2 --heads 4 --ff 128 --vocab 512 --ctx 128 --seed 7104 --out-gain 4 --norm-noise 0.5 --pooling cls|file
gpt2-mean|--arch gpt2 --dim 64 --layers 2 --heads 4 --ff 256 --vocab 512 --ctx 128 --seed 7103 --out-gain 4 --norm-noise 0.5 --pooling mean|file
qwen2-last|--arch qwen2 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --vocab 512 --ctx 128 --seed 7105 --out-gain 4 --norm-noise 0.5 --pooling last|file
bert-mean|--arch bert --dim 64 --layers 2 --heads 4 --ff 128 --ctx 128 --seed 7201 --out-gain 0.5 --norm-noise 0.5 --pooling mean|file|models/vocab/ggml-vocab-bert-bge.gguf
bert-cls|--arch bert --dim 64 --layers 2 --heads 4 --ff 128 --ctx 128 --seed 7202 --out-gain 0.5 --norm-noise 0.5 --pooling cls|file|models/vocab/ggml-vocab-bert-bge.gguf
nomic-bert-mean|--arch nomic-bert --dim 64 --layers 2 --heads 4 --ff 128 --ctx 128 --seed 7301 --out-gain 0.5 --norm-noise 0.5 --pooling mean|file|models/vocab/ggml-vocab-bert-bge.gguf
LIST
    echo ' ]'
    echo '}'
} >"$out.tmp"
mv "$out.tmp" "$out"
