# Helpers for the tport serve tests (bash).  The tests start the real
# server on a free loopback port (--port 0; the port is read back from its
# "listening on" line) and talk to it with curl and node.
# Needs: TPORT_CLI (the built tport), TPORT_SHARED_DIR.

MODEL="${TPORT_SHARED_DIR:-../shared}/models/llama-2-tiny-random.gguf"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tport-serve-test.XXXXXX")
SERVER_PID=""
FAILS=0
trap 'stop_server >/dev/null 2>&1; rm -rf "$WORK"' EXIT

skip() { echo "skipped: $*"; exit 77; }
# In CI every dependency is installed by .ci/run: missing is a failure there.
need() {
    if [ "${CI:-}" = true ]; then echo "FAIL: $* (CI must have it: see .ci/run)"; exit 1; fi
    skip "$*"
}
[ -n "${TPORT_CLI:-}" ] && [ -x "$TPORT_CLI" ] || { echo "FAIL: TPORT_CLI is not set"; exit 1; }
[ -f "$MODEL" ] || skip "$MODEL is absent"
command -v curl >/dev/null || need "curl is not installed"
command -v node >/dev/null || need "node is not installed"

check() { # check NAME CONDITION-STATUS
    if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1"; FAILS=$((FAILS + 1)); fi
}
expect_eq() { # expect_eq NAME GOT WANT
    if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2', want '$3'"; FAILS=$((FAILS + 1)); fi
}
finish() {
    # a sanitizer report in any server's log fails the test (build-tsan, build-asan)
    if cat "$WORK"/*server*.log 2>/dev/null | grep -E -m5 -A20 'WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer|runtime error:'; then
        echo "FAIL: a sanitizer reported a problem in the server"
        FAILS=$((FAILS + 1))
    fi
    if [ "$FAILS" -ne 0 ]; then echo "$FAILS check(s) failed"; [ -f "$WORK/server.log" ] && tail -30 "$WORK/server.log"; exit 1; fi
    echo "all checks passed"
    exit 0
}

# start_server ARGS...: sets PORT, URL, SERVER_PID; the log is $WORK/server.log
start_server() {
    [ -f "$WORK/server.log" ] && cat "$WORK/server.log" >>"$WORK/earlier-servers.log"
    : >"$WORK/server.log"
    "$TPORT_CLI" serve -m "$MODEL" --port 0 --threads 1 "$@" 2>"$WORK/server.log" &
    SERVER_PID=$!
    for _ in $(seq 1 600); do
        PORT=$(sed -n 's|.*listening on http://[^ ]*:\([0-9]*\) .*|\1|p' "$WORK/server.log")
        [ -n "$PORT" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || { echo "FAIL: the server exited:"; cat "$WORK/server.log"; exit 1; }
        sleep 0.1
    done
    [ -n "$PORT" ] || { echo "FAIL: the server did not start"; cat "$WORK/server.log"; exit 1; }
    URL="http://127.0.0.1:$PORT"
}
# stop_server: SIGTERM, wait; sets SERVER_RC
stop_server() {
    SERVER_RC=0
    [ -n "$SERVER_PID" ] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID"
    SERVER_RC=$?
    SERVER_PID=""
}

# http METHOD PATH [BODY] [curl args...]: body to $WORK/body, prints the status
http() {
    local method=$1 path=$2 body=${3-}
    shift 3 2>/dev/null || shift $#
    if [ -n "$body" ]; then
        curl -s -o "$WORK/body" -w '%{http_code}' -X "$method" -H 'Content-Type: application/json' \
            "${AUTH[@]}" --data-binary "$body" "$@" "$URL$path"
    else
        curl -s -o "$WORK/body" -w '%{http_code}' -X "$method" "${AUTH[@]}" "$@" "$URL$path"
    fi
}
AUTH=()

# jget EXPR [FILE]: evaluates a JS expression over the JSON in FILE ($WORK/body), as j
jget() {
    node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
             const v = eval(process.argv[1]); console.log(typeof v === "string" ? v : JSON.stringify(v));' \
        "$1" "${2:-$WORK/body}"
}

# health_field NAME: a number from /health
health_field() { # grep, not node: polled in tight loops
    curl -s "$URL/health" | grep -o "\"$1\":[0-9]*" | cut -d: -f2
}
# wait_for CONDITION-COMMAND [tenths]: polls until the command succeeds
wait_for() {
    for _ in $(seq 1 "${2:-100}"); do
        eval "$1" && return 0
        sleep 0.1
    done
    return 1
}
# sse_text FILE: the text of a completions event stream, joined
sse_text() {
    node -e 'const ev = require("fs").readFileSync(process.argv[1], "utf8").split("\n")
               .filter(l => l.startsWith("data: {")).map(l => JSON.parse(l.slice(6)));
             console.log(ev.filter(e => e.choices.length).map(e => e.choices[0].text).join(""));' "$1"
}
