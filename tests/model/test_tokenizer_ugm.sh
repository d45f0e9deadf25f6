#!/bin/sh
# Unigram (T5/UGM) tokenization against llama.cpp (ugm_check.py): GGUF
# files and Hugging Face folders made by ugm_vocab.py with SentencePiece,
# and ../shared's ggml-vocab-nomic-bert-moe.gguf.
# Skipped (77) only when python3-sentencepiece is missing, and in CI, where
# .ci/run installs it (tools/deps.sh --test), that is a failure.
set -u
tport=$1
refs=$2
shared=$3
here=$(dirname "$0")
# Debian's interpreter, where python3-sentencepiece installs
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if ! "$PY" -c 'import sentencepiece; from sentencepiece import sentencepiece_model_pb2' 2>/dev/null; then
    if [ "${CI:-}" = true ]; then
        echo "FAIL: python3-sentencepiece is missing in CI"
        exit 1
    fi
    echo "skipped: python3-sentencepiece is not installed (apt-get install python3-sentencepiece)"
    exit 77
fi
exec "$PY" "$here/ugm_check.py" "$tport" "$refs" "$shared"
