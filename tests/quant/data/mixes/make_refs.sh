#!/bin/sh
# Makes refs.txt / refs_moe.txt / refs_falcon.txt: the tensor types and bytes llama.cpp's
# llama_model_quantize (llama-quantize) writes for each file type below, on
# the models and importance matrices that test_quant_cli_mixes makes (see
# README.md).
#
#   sh make_refs.sh BUILD_DIR LLAMA_SRC BINS dense > refs.txt
#   sh make_refs.sh BUILD_DIR LLAMA_SRC BINS moe > refs_moe.txt
#   sh make_refs.sh BUILD_DIR LLAMA_SRC BINS falcon > refs_falcon.txt
#     BUILD_DIR  a tensorport build (with tport and tests/quant/test_quant_cli_mixes)
#     LLAMA_SRC  llama.cpp's source of the bundle's release (headers only)
#     BINS       node-llama-cpp 3.21.1's .../@node-llama-cpp/linux-x64/bins/linux-x64
set -e
BUILD=$1 LLAMA=$2 BINS=$3 TAG=${4:-dense}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
g++ -O2 -std=c++17 -I "$LLAMA/include" -I "$LLAMA/ggml/include" "$HERE/llamacpp_quantize_refs.cpp" \
    -o "$TMP/refs" -L"$BINS" -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,"$BINS"
"$BUILD/tests/quant/test_quant_cli_mixes" --write-inputs "$TMP" >&2
echo "# made by make_refs.sh ($TAG): llama_model_quantize of node-llama-cpp 3.21.1 (llama.cpp v0.4.0 bundle)"
echo "# on test_quant_cli_mixes's $TAG model and its write_imatrix() importance matrix"
# NAME:llama_ftype, each without then with the importance matrix
if [ "$TAG" = falcon ]; then
    MIXES="Q2_K:10 Q3_K_M:12 Q3_K_L:13 Q4_K_S:14 Q4_K_M:15 Q5_K_M:17 IQ3_XXS:23 IQ2_XXS:19 IQ4_XS:30"
elif [ "$TAG" = moe ]; then
    MIXES="Q2_K:10 Q3_K_M:12 Q4_K_S:14 Q4_K_M:15 Q5_K_M:17 Q6_K:18 IQ2_XS:20 IQ2_M:29 IQ3_XXS:23 IQ3_M:27 \
           IQ1_M:31 IQ4_XS:30 MXFP4_MOE:38"
else
    MIXES="Q4_0:2 Q4_1:3 Q5_0:8 Q5_1:9 Q8_0:7 Q2_K:10 Q2_K_S:21 Q3_K_S:11 Q3_K_M:12 Q3_K_L:13 Q4_K_S:14 \
           Q4_K_M:15 Q5_K_S:16 Q5_K_M:17 Q6_K:18 IQ2_XXS:19 IQ2_XS:20 IQ2_S:28 IQ2_M:29 IQ3_XS:22 IQ3_XXS:23 \
           IQ3_S:26 IQ3_M:27 IQ1_S:24 IQ1_M:31 IQ4_NL:25 IQ4_XS:30 TQ1_0:36 TQ2_0:37 MXFP4_MOE:38 Q1_0:40 \
           Q2_0:41 F16:1 BF16:32"
fi
for m in $MIXES; do
    name=${m%%:*} ft=${m##*:}
    "$TMP/refs" "$TMP/$TAG.gguf" "$TMP/out.gguf" - "$ft" "$name"
    "$TMP/refs" "$TMP/$TAG.gguf" "$TMP/out.gguf" "$TMP/$TAG-imatrix.gguf" "$ft" "$name"
done
# llama-quantize's overrides (the dense model only)
if [ "$TAG" = dense ]; then
    "$TMP/refs" "$TMP/$TAG.gguf" "$TMP/out.gguf" - 15 Q4_K_M --pure
    "$TMP/refs" "$TMP/$TAG.gguf" "$TMP/out.gguf" - 12 Q3_K_M --output-tensor-type q8_0 --token-embedding-type q4_0
    "$TMP/refs" "$TMP/$TAG.gguf" "$TMP/out.gguf" "$TMP/$TAG-imatrix.gguf" 20 IQ2_XS --output-tensor-type iq4_xs \
        --token-embedding-type q5_K --pure
fi
