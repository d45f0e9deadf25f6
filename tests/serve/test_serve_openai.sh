#!/usr/bin/env bash
# tport serve through the official `openai` npm package, installed from the
# npm registry into this test's own temporary folder.  Skips (visibly) only
# if npm cannot install it, except in CI, where it must run.
. "$(dirname "$0")/serve_lib.sh"
command -v npm >/dev/null || need "npm is not installed"
mkdir -p "$WORK/npm"
if ! (cd "$WORK/npm" && timeout 300 npm install openai --no-audit --no-fund --silent >"$WORK/npm.log" 2>&1); then
    cat "$WORK/npm.log"
    need "npm install openai failed (no registry?)"
fi
echo "openai $(node -e 'console.log(require(process.argv[1]).version)' "$WORK/npm/node_modules/openai/package.json")"
start_server --parallel 2 --ctx 512 --api-key sk-test
NODE_PATH="$WORK/npm/node_modules" node "$(dirname "$0")/openai_client.js" "$URL" sk-test
RC=$?
stop_server
[ "$RC" = 0 ] || { tail -20 "$WORK/server.log"; exit 1; }
[ "$SERVER_RC" = 0 ] || { echo "FAIL: the server exited with $SERVER_RC"; exit 1; }

# a tool round trip: the tiny model with Qwen2.5's chat template (Hermes tool calls)
TEMPLATE="${TPORT_SHARED_DIR:-../shared}/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
if [ -f "$TEMPLATE" ] && [ -n "${TPORT_CHAT_JINJA_TEST:-}" ]; then
    "$TPORT_CHAT_JINJA_TEST" --write-gguf "$WORK/qwen-template.gguf" "$TEMPLATE" || { echo "FAIL: writing the model"; exit 1; }
    MODEL="$WORK/qwen-template.gguf"
    start_server --ctx 2048 --api-key sk-test
    NODE_PATH="$WORK/npm/node_modules" node "$(dirname "$0")/openai_tools.js" "$URL" sk-test
    RC=$?
    stop_server
    [ "$RC" = 0 ] || { tail -20 "$WORK/server.log"; exit 1; }
else
    echo "FAIL: $TEMPLATE or TPORT_CHAT_JINJA_TEST is missing"
    exit 1
fi
finish
