#!/usr/bin/env bash
# tport serve under wrk for a short, fixed time: more connections than
# slots + queue, so some requests must get 503; nothing else may fail, the
# server must not crash, and its memory must not grow from run to run.
. "$(dirname "$0")/serve_lib.sh"
command -v wrk >/dev/null || need "wrk is not installed"
SECONDS_EACH=${SERVE_LOAD_SECONDS:-3}
start_server --parallel 2 --queue 2 --ctx 128 --max-tokens 8
cat >"$WORK/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"prompt":"Once upon a time","max_tokens":8,"temperature":0}'
LUA
rss_kib() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$SERVER_PID/status"; }
RSS=()
for run in 1 2 3; do
    wrk -t2 -c8 -d"${SECONDS_EACH}s" --timeout 20s -s "$WORK/post.lua" "$URL/v1/completions" >"$WORK/wrk$run" 2>&1
    echo "run $run: $(grep -E 'Requests/sec|Non-2xx|Socket errors' "$WORK/wrk$run" | tr -s ' ' | tr '\n' ';') RSS $(rss_kib) KiB"
    kill -0 "$SERVER_PID" 2>/dev/null
    check "run $run: the server is alive" $?
    ! grep -q "Socket errors" "$WORK/wrk$run"
    check "run $run: no socket errors (connect, read, write, timeout)" $?
    RSS+=("$(rss_kib)")
done
STATUSES=$(sed -n 's/^tport serve: [^ ]* POST \/v1\/completions \([0-9]*\) .*/\1/p' "$WORK/server.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
echo "statuses over all runs: $STATUSES"
OTHER=$(sed -n 's/^tport serve: [^ ]* POST \/v1\/completions \([0-9]*\) .*/\1/p' "$WORK/server.log" | grep -vcE '^(200|503|499)$')
expect_eq "only 200 and 503 answers (and 499: requests cut when wrk stops)" "$OTHER" 0
GONE=$(grep -c 'POST /v1/completions 499 ' "$WORK/server.log")
[ "$GONE" -le 24 ]
check "499s only from the 8 connections wrk cuts at the end of each of 3 runs ($GONE)" $?
grep -qE 'POST /v1/completions 200 ' "$WORK/server.log"
check "some requests served" $?
grep -qE 'POST /v1/completions 503 ' "$WORK/server.log"
check "8 connections over 2 slots + 2 queue places: some 503s" $?
# run 1 warms up (thread stacks, malloc arenas); runs 2 and 3 do the same work
GROWTH=$((RSS[2] - RSS[1]))
echo "RSS after each run: ${RSS[*]} KiB; growth from run 2 to run 3: $GROWTH KiB"
if [ -n "${TPORT_SANITIZE:-}" ]; then
    # ASan's quarantine and TSan's shadow grow by design; leaks are LeakSanitizer's job there
    echo "not checked under -fsanitize=$TPORT_SANITIZE: memory growth"
else
    [ "$GROWTH" -lt 2048 ]
    check "no memory growth across runs (< 2 MiB from run 2 to 3)" $?
fi
expect_eq "healthy after the load" "$(http GET /health)" 200
stop_server
expect_eq "graceful exit after the load" "$SERVER_RC" 0
finish
