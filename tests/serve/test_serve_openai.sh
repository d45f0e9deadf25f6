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
finish
