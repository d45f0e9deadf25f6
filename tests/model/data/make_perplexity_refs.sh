#!/bin/sh
# Produces perplexity_refs.txt: llama-perplexity's figures on random-weight
# files that `tport synth` writes from the recipes below, on
# perplexity_text.txt.  A recipe's tolerance is what test_perplexity.sh
# allows on the final estimate (each chunk's running figure: 5 times it):
# 1e-4 (4 significant digits) for f32 weights; 1e-3 for quantized ones,
# where activations are rounded to 8 bits and a last-bit difference before
# the rounding moves a value by a whole step -- llama-perplexity's own
# figure on llama-q8_0 moves by 8e-4 between flash attention on and off.  Run outside CI (see README.md, "perplexity_refs"):
#   make_perplexity_refs.sh TPORT LLAMA_PERPLEXITY LLAMA_BINS_DIR SHARED > perplexity_refs.txt
# LLAMA_PERPLEXITY runs with LLAMA_BINS_DIR as its working directory, where
# ggml finds its CPU backend libraries.
set -eu
tport=$1 ppl=$2 bins=$3 shared=$4
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
text=$here/perplexity_text.txt
echo "# name|synth arguments|vocab_from (under ../shared, - = synth's own)|ctx|tolerance (relative)|llama-perplexity's [i] values|final PPL|+/-"
grep -vE '^(#|$)' <<'RECIPES' | while IFS='|' read -r name args vocab ctx tol; do
llama|--arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 192 --ctx 128 --seed 33 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-llama-spm.gguf|128|1e-4
llama-q8_0|--arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 192 --ctx 128 --seed 33 --out-gain 4 --norm-noise 0.5 --type q8_0|models/vocab/ggml-vocab-llama-spm.gguf|128|1e-3
llama-q4_k|--arch llama --dim 256 --layers 2 --heads 4 --kv-heads 2 --ff 512 --ctx 128 --seed 34 --out-gain 4 --norm-noise 0.5 --type q4_k|models/vocab/ggml-vocab-llama-spm.gguf|64|1e-3
qwen2|--arch qwen2 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 192 --ctx 128 --seed 13 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-qwen2.gguf|128|1e-4
gemma|--arch gemma --dim 64 --layers 2 --heads 4 --kv-heads 1 --head-size 32 --ff 192 --ctx 128 --seed 20 --out-gain 8 --norm-noise 0.5|models/vocab/ggml-vocab-llama-spm.gguf|128|1e-4
phi2|--arch phi2 --dim 64 --layers 2 --heads 4 --rot 8 --ff 256 --ctx 128 --seed 3016 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-gpt-2.gguf|128|1e-4
gpt2|--arch gpt2 --dim 64 --layers 2 --heads 4 --ff 256 --ctx 128 --seed 6011 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-gpt-2.gguf|128|1e-4
falcon|--arch falcon --dim 64 --layers 2 --heads 4 --kv-heads 1 --ff 256 --ctx 128 --seed 17 --out-gain 8 --norm-noise 0.5|models/vocab/ggml-vocab-falcon.gguf|128|1e-4
mpt|--arch mpt --dim 64 --layers 2 --heads 4 --ff 256 --ctx 128 --alibi-bias 8 --clamp-kqv 2 --seed 5018 --out-gain 8 --norm-noise 0.5|models/vocab/ggml-vocab-mpt.gguf|128|1e-4
gptneox|--arch gptneox --dim 64 --layers 2 --heads 4 --rot 4 --ff 256 --ctx 128 --seed 1014 --out-gain 8 --norm-noise 0.5|models/vocab/ggml-vocab-gpt-neox.gguf|128|1e-4
starcoder|--arch starcoder --dim 64 --layers 2 --heads 4 --kv-heads 1 --ff 256 --ctx 128 --seed 1012 --out-gain 8 --norm-noise 0.5|models/vocab/ggml-vocab-starcoder.gguf|128|1e-4
gemma2|--arch gemma2 --dim 64 --layers 4 --heads 4 --kv-heads 2 --head-size 32 --ff 192 --ctx 128 --window 8 --attn-softcap 5 --logit-softcap 5 --seed 4040 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-llama-spm.gguf|128|1e-4
gemma3|--arch gemma3 --dim 64 --layers 7 --heads 4 --kv-heads 2 --head-size 32 --ff 192 --ctx 128 --window 8 --rope-base 1000000 --rope-linear 8 --seed 4041 --out-gain 8 --norm-noise 0.5|models/vocab/ggml-vocab-llama-spm.gguf|128|1e-4
mixtral|--arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --ctx 128 --experts 8 --experts-used 2 --seed 131 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-llama-spm.gguf|128|1e-4
qwen2moe|--arch qwen2moe --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --ctx 128 --experts 8 --experts-used 4 --expert-ff 64 --shared-ff 128 --seed 2032 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-qwen2.gguf|128|1e-4
qwen3moe|--arch qwen3moe --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-size 32 --ff 128 --ctx 128 --experts 8 --experts-used 2 --expert-ff 64 --seed 4041 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-qwen2.gguf|128|1e-4
olmoe|--arch olmoe --dim 64 --layers 2 --heads 4 --ff 128 --ctx 128 --experts 8 --experts-used 2 --seed 5042 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-gpt-neox.gguf|128|1e-4
llama3|--dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --ctx 256 --with rope_freqs.weight --seed 7 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-llama-bpe.gguf|128|1e-4
llama-yarn|--dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --ctx 256 --rope-scaling yarn --rope-factor 4 --rope-orig-ctx 32 --rope-attn-factor 0.8 --seed 1008 --out-gain 8 --norm-noise 0.5|models/vocab/ggml-vocab-llama-bpe.gguf|128|1e-4
qwen3|--arch qwen3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-size 32 --ff 128 --ctx 256 --seed 3011 --out-gain 8 --norm-noise 0.5|models/vocab/ggml-vocab-qwen2.gguf|128|1e-4
olmo2|--arch olmo2 --dim 64 --layers 2 --heads 4 --ff 128 --ctx 256 --seed 2012 --out-gain 8 --norm-noise 0.5|models/vocab/ggml-vocab-gpt-2.gguf|128|1e-4
granite|--arch granite --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --ctx 256 --seed 3013 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-refact.gguf|128|1e-4
smollm3|--arch smollm3 --dim 64 --layers 4 --heads 4 --kv-heads 2 --ff 128 --ctx 256 --seed 3014 --out-gain 8 --norm-noise 0.5|models/vocab/ggml-vocab-llama-bpe.gguf|128|1e-4
phi3|--arch phi3 --dim 64 --layers 2 --heads 4 --ff 128 --ctx 256 --rot 12 --with rope_factors_long.weight --with rope_factors_short.weight --rope-orig-ctx 64 --rope-attn-factor 1.2 --seed 5015 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-phi-3.gguf|128|1e-4
mistral3|--arch mistral3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-size 32 --ff 128 --ctx 256 --seed 16 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-gpt-2.gguf|128|1e-4
gpt-oss|--arch gpt-oss --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-size 32 --ff 128 --ctx 256 --experts 8 --experts-used 2 --expert-ff 64 --window 8 --rope-scaling yarn --rope-factor 4 --rope-orig-ctx 32 --seed 4101 --out-gain 4 --norm-noise 0.5|models/vocab/ggml-vocab-gpt-2.gguf|128|1e-4
gpt-oss-mxfp4-moe|--arch gpt-oss --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-size 32 --ff 128 --ctx 256 --experts 8 --experts-used 2 --expert-ff 64 --window 8 --rope-scaling yarn --rope-factor 4 --rope-orig-ctx 32 --seed 4101 --out-gain 4 --norm-noise 0.5 --type q8_0 --experts-type mxfp4|models/vocab/ggml-vocab-gpt-2.gguf|128|1e-3
RECIPES
    if [ "$vocab" = - ]; then vf=""; else vf="--vocab-from $shared/$vocab"; fi
    # shellcheck disable=SC2086
    "$tport" synth $args $vf -o "$tmp/m.gguf" >/dev/null 2>&1
    (cd "$bins" && "$ppl" -m "$tmp/m.gguf" -f "$text" -c "$ctx" -b "$ctx" -t 1 >"$tmp/out" 2>&1)
    vals=$(grep -oE '\[[0-9]+\][0-9.]+' "$tmp/out" | sed -E 's/\[[0-9]+\]//' | paste -sd, -)
    final=$(sed -nE 's/.*Final estimate: PPL = ([0-9.]+) \+\/- ([0-9.]+).*/\1|\2/p' "$tmp/out")
    [ -n "$vals" ] && [ -n "$final" ] || { echo "$name: no figures from llama-perplexity" >&2; exit 1; }
    echo "$name|$args|$vocab|$ctx|$tol|$vals|$final"
done
