#!/usr/bin/env bash
# bench/serve-vs-llamaserver.sh — `tport serve` against llama.cpp's
# llama-server on the same GGUF file, under the same load
# (bench/serve_bench.js): for each --parallel N, each server is started
# with N slots and loaded by N clients for --seconds, every request a
# streamed completion of --tokens tokens (ignore_eos); then the
# repeated-conversation case (a --prefix-token chat, then the same chat
# one turn longer).  The two servers alternate per N, --rounds times; the
# table gives the median of the rounds.  Same threads for both; each slot
# gets --slot-ctx tokens of context.
set -u

usage() {
    cat <<USAGE
usage: $0 [options] MODEL.gguf
  --parallel LIST   slot counts, each loaded by as many clients (default 1,4,8)
  --tokens N        tokens a request generates (default 128)
  --seconds S       load time per run (default 30)
  --threads N       threads of each server (default 2)
  --slot-ctx N      context of each slot (default 4096)
  --prefix N        prompt tokens of the repeated conversation (default 2000; 0 = skip)
  --rounds N        alternations of the two servers (default 1)
  --tport PATH      the tport tool (default \$TPORT or build/tport beside this folder)
  --server PATH     llama-server (default \$LLAMA_SERVER, else /work/ext/lserver/llama-server,
                    built as bench/README-llamacpp.md says)
  --port N          port both servers listen on, one at a time (default 18181)
Needs node (18+), curl and python3.
USAGE
}

here=$(cd "$(dirname "$0")" && pwd)
parallel=1,4,8 tokens=128 seconds=30 threads=2 slot_ctx=4096 prefix=2000 rounds=1 port=18181
tport=${TPORT:-$(dirname "$here")/build/tport}
server=${LLAMA_SERVER:-/work/ext/lserver/llama-server}
model=
while [ $# -gt 0 ]; do
    case "$1" in
    --parallel) parallel=${2:?}; shift 2 ;;
    --tokens) tokens=${2:?}; shift 2 ;;
    --seconds) seconds=${2:?}; shift 2 ;;
    --threads) threads=${2:?}; shift 2 ;;
    --slot-ctx) slot_ctx=${2:?}; shift 2 ;;
    --prefix) prefix=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --tport) tport=${2:?}; shift 2 ;;
    --server) server=${2:?}; shift 2 ;;
    --port) port=${2:?}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "$0: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) [ -z "$model" ] || { echo "$0: one model file" >&2; exit 2; }; model=$1; shift ;;
    esac
done
[ -n "$model" ] && [ -f "$model" ] || { echo "$0: no model file" >&2; usage >&2; exit 1; }
[ -x "$tport" ] || { echo "$0: tport not found at $tport" >&2; exit 1; }
[ -n "$server" ] && [ -x "$server" ] || { echo "$0: llama-server not found at '$server' (--server or LLAMA_SERVER)" >&2; exit 1; }
for t in node curl python3; do
    command -v $t >/dev/null || { echo "$0: $t is needed" >&2; exit 1; }
done

log=$(mktemp -d)
echo "raw results and server logs: $log" >&2
pid=
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap stop EXIT
failed=0

# start NAME N: one server with N slots; waits for /health (model loaded)
start() {
    local name=$1 n=$2
    # a server left on the port would answer /health and be measured instead
    if curl -s -o /dev/null "http://127.0.0.1:$port/health" 2>/dev/null; then
        echo "$0: port $port is already in use (--port)" >&2
        return 1
    fi
    if [ "$name" = tport ]; then
        "$tport" serve -m "$model" --port $port --parallel "$n" --ctx "$slot_ctx" --threads "$threads" \
            --queue 64 >"$log/$name-$n.log" 2>&1 &
    else
        "$server" -m "$model" --port $port -np "$n" -c $((n * slot_ctx)) -t "$threads" -tb "$threads" \
            --no-webui >"$log/$name-$n.log" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 600); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    echo "$0: $name did not start; its log: $log/$name-$n.log" >&2
    tail -5 "$log/$name-$n.log" >&2
    return 1
}

for r in $(seq "$rounds"); do
    for n in ${parallel//,/ }; do
        for name in tport llama-server; do
            start $name "$n" || exit 1
            node "$here/serve_bench.js" "http://127.0.0.1:$port" "$n" "$seconds" "$tokens" >"$log/$name-load-$n-$r.json" ||
                { echo "$0: $name load run failed" >&2; failed=1; }
            if [ "$prefix" -gt 0 ] && [ "$n" = "${parallel%%,*}" ]; then
                node "$here/serve_bench.js" "http://127.0.0.1:$port" prefix "$prefix" >"$log/$name-prefix-$r.json" ||
                    { echo "$0: $name prefix run failed" >&2; failed=1; }
            fi
            stop
        done
    done
done

python3 - "$log" "$parallel" "$prefix" <<'PY' || failed=1
import glob, json, os, statistics, sys
log, parallel, prefix = sys.argv[1], sys.argv[2].split(','), int(sys.argv[3])
def runs(pattern):
    out = []
    for f in sorted(glob.glob(os.path.join(log, pattern))):
        try:
            out.append(json.load(open(f)))
        except (OSError, ValueError):
            pass
    return out
def med(rs, key):
    v = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(v) if v else None
def fmt(x, d=1):
    return '-' if x is None else f'{x:.{d}f}'
print('| slots = clients | tport t/s | llama-server t/s | ratio | tport TTFT p50 / p99 ms | llama-server TTFT p50 / p99 ms | errors (tport, llama-server) |')
print('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
single = None
for n in parallel:
    t, l = runs(f'tport-load-{n}-*.json'), runs(f'llama-server-load-{n}-*.json')
    tt, lt = med(t, 'tokens_per_s'), med(l, 'tokens_per_s')
    if n == '1':
        single = tt
    ratio = tt / lt if tt and lt else None
    err = (sum(r['errors'] for r in t), sum(r['errors'] for r in l))
    print(f'| {n} | {fmt(tt)} | {fmt(lt)} | {fmt(ratio, 2)} | {fmt(med(t, "ttft_ms_p50"), 0)} / {fmt(med(t, "ttft_ms_p99"), 0)} '
          f'| {fmt(med(l, "ttft_ms_p50"), 0)} / {fmt(med(l, "ttft_ms_p99"), 0)} | {err[0]}, {err[1]} |')
if single:
    for n in parallel:
        tt = med(runs(f'tport-load-{n}-*.json'), 'tokens_per_s')
        if n != '1' and tt:
            print(f'\ntport aggregate at {n} streams / its single stream: {tt / single:.2f}x', end='')
    print()
if prefix:
    for name in ('tport', 'llama-server'):
        p = runs(f'{name}-prefix-*.json')
        if p:
            print(f'\n{name}: repeated {prefix}-token conversation, first turn TTFT {fmt(med(p, "first_ttft_ms"), 0)} ms, '
                  f'second {fmt(med(p, "second_ttft_ms"), 0)} ms (ratio {fmt(med(p, "ratio"), 3)})', end='')
    print()
# a run whose requests were refused measured nothing: say so, and fail
bad = [os.path.basename(f) for f in sorted(glob.glob(os.path.join(log, '*-load-*.json')))
       if any(r.get('errors') for r in runs(os.path.basename(f)))]
if bad:
    print(f'failed requests in {", ".join(bad)}; the servers\' logs in {log} say why', file=sys.stderr)
    sys.exit(1)
PY
exit $failed
