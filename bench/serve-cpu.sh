#!/usr/bin/env bash
# bench/serve-cpu.sh — what `tport serve` spends per generated token, in CPU
# seconds rather than wall time, so that builds can be compared on a busy
# machine: each TPORT given is started in turn with --parallel N slots and
# loaded by N clients (bench/serve_bench.js, streamed completions of
# --tokens tokens, ignore_eos) for --seconds after a short warm-up; the
# line per run gives the server's user and system CPU seconds per 1000
# generated tokens, its context switches per token and the wall t/s (noise
# when the machine is shared).  --rounds alternates the builds.
#
# CPU time counts every thread, those that ended during the run included
# (the process's /proc stat); context switches are summed over the threads
# alive at the start and at the end, so a connection thread that came and
# went between them is missed (the clients keep their connections).
set -u

usage() {
    cat <<USAGE
usage: $0 [options] MODEL.gguf TPORT [TPORT...]
  --parallel N      slots, and clients (default 8)
  --tokens N        tokens a request generates (default 128)
  --seconds S       measured load time per run (default 10)
  --threads N       threads of the server (default 2)
  --rounds N        alternations of the builds (default 2)
  --port N          port (default 18191)
Needs node (18+), curl and python3; Linux (/proc).
USAGE
}

here=$(cd "$(dirname "$0")" && pwd)
parallel=8 tokens=128 seconds=10 threads=2 rounds=2 port=18191
args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --parallel) parallel=${2:?}; shift 2 ;;
    --tokens) tokens=${2:?}; shift 2 ;;
    --seconds) seconds=${2:?}; shift 2 ;;
    --threads) threads=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --port) port=${2:?}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "$0: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
    esac
done
[ ${#args[@]} -ge 2 ] || { usage >&2; exit 2; }
model=${args[0]}
[ -f "$model" ] || { echo "$0: no model file $model" >&2; exit 1; }
for t in node curl python3; do
    command -v $t >/dev/null || { echo "$0: $t is needed" >&2; exit 1; }
done
hz=$(getconf CLK_TCK)
url=http://127.0.0.1:$port
pid=
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap stop EXIT

# utime stime of the whole process, in clock ticks (fields 14, 15 after
# the command name, which may hold spaces)
cpu() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12, $13}'; }
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s + 0}'; }

run() {
    local tport=$1
    if curl -s -o /dev/null "$url/health" 2>/dev/null; then
        echo "$0: port $port is already in use (--port)" >&2
        return 1
    fi
    "$tport" serve -m "$model" --port "$port" --parallel "$parallel" --threads "$threads" --queue 64 \
        >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 600); do
        curl -sf "$url/health" >/dev/null 2>&1 && break
        kill -0 "$pid" 2>/dev/null || { echo "$0: $tport did not start" >&2; pid=; return 1; }
        sleep 0.2
    done
    node "$here/serve_bench.js" "$url" "$parallel" 2 "$tokens" >/dev/null || return 1
    local c0 s0 c1 s1 out
    c0=$(cpu $pid) s0=$(switches $pid)
    out=$(node "$here/serve_bench.js" "$url" "$parallel" "$seconds" "$tokens") || return 1
    c1=$(cpu $pid) s1=$(switches $pid)
    stop
    python3 - "$tport" "$hz" "$c0" "$c1" "$s0" "$s1" "$out" <<'PY'
import json, sys
tport, hz = sys.argv[1], int(sys.argv[2])
u0, y0 = map(int, sys.argv[3].split()); u1, y1 = map(int, sys.argv[4].split())
s0, s1 = int(sys.argv[5]), int(sys.argv[6]); r = json.loads(sys.argv[7])
tok = r['tokens_per_s'] * r['seconds']
if tok <= 0:
    sys.exit(f'{tport}: no tokens generated')
user, system = (u1 - u0) / hz, (y1 - y0) / hz
print(f'{tport}: {tok:.0f} tokens, CPU s per 1000 tokens {1000 * (user + system) / tok:.3f} '
      f'(user {1000 * user / tok:.3f}, system {1000 * system / tok:.3f}), '
      f'context switches per token {(s1 - s0) / tok:.1f}, wall t/s {r["tokens_per_s"]}')
PY
}

for _ in $(seq "$rounds"); do
    for tport in "${args[@]:1}"; do
        run "$tport" || exit 1
    done
done
