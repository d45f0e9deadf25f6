#!/bin/sh
# Fetches what the ggml bridge (backends/ggml) is built and tested with,
# into DIR (outside the repository): ggml's prebuilt backend libraries from
# the npm registry (node-llama-cpp 3.21.1's packages: libggml-base.so, the
# CPU variants libggml-cpu-*.so, libggml-vulkan.so), and the headers of the
# same ggml release, taken from the llama.cpp source bundle in the
# node-llama-cpp package.  Prints the two variables the build reads:
#   TPORT_GGML_DIR   ggml/ folder of the headers (cmake -DTPORT_GGML_DIR=...)
#   TPORT_GGML_LIBS  folder of the libraries (the tests; TPORT_GGML_PATH at run time)
# usage: sh tools/ggml-fetch.sh DIR
set -eu
dir=${1:?usage: sh tools/ggml-fetch.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
npm install --prefix "$dir" --ignore-scripts --no-audit --no-fund node-llama-cpp@3.21.1 \
  @node-llama-cpp/linux-x64@3.21.1 @node-llama-cpp/linux-x64-vulkan@3.21.1 >/dev/null
bundle="$dir/node_modules/node-llama-cpp/llama/gitRelease.bundle"
rm -rf "$dir/ggml-git" "$dir/ggml"
git init -q "$dir/ggml-git"
git -C "$dir/ggml-git" fetch -q "$bundle" HEAD
mkdir -p "$dir/ggml"
git -C "$dir/ggml-git" archive FETCH_HEAD ggml/include ggml/CMakeLists.txt ggml/src/ggml-backend-impl.h |
  tar -x -C "$dir/ggml" --strip-components=1
rm -rf "$dir/ggml-git"
echo "TPORT_GGML_DIR=$dir/ggml"
echo "TPORT_GGML_LIBS=$dir/node_modules/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan"
