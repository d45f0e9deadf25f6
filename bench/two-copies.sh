#!/usr/bin/env bash
# bench/two-copies.sh — how far a second thread can go on this machine.
#
# For each model it alternates, --rounds times:
#   alone   one `tport bench` on 1 thread, nothing else running;
#   copies  two such processes started together: they share nothing but
#           the hardware (cores, caches, memory, the host's clock), so the
#           sum of their rates is what two cores give this work here;
#   two     one `tport bench` on 2 threads.
# The table gives the medians and two ratios: "ceiling" = copies / alone,
# the machine's own limit for 2 threads, and "2t / 1t" = two / alone, what
# tport's threads reach.  2t / 1t near the ceiling means the threads lose
# nothing to each other; below it, the difference is tport's to find.
set -u

usage() {
    cat <<USAGE
usage: $0 [--rounds N] [-p N] [-n N] [-r REPS] [--tport PATH] MODEL.gguf [...]
  --rounds N  alternations of the three runs per model (default 3)
  -p N        prompt tokens (default 512; 0 = skip)
  -n N        generated tokens (default 0; 0 = skip)
  -r REPS     repetitions inside each tport bench (default 3)
  --tport P   the tport tool (default \$TPORT or build/tport beside this folder)
Needs python3.  The test measured is pp when -p > 0, else tg.
USAGE
}

here=$(cd "$(dirname "$0")" && pwd)
rounds=3 p=512 n=0 reps=3
tport=${TPORT:-$(dirname "$here")/build/tport}
models=()
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) rounds=${2:?}; shift 2 ;;
    -p) p=${2:?}; shift 2 ;;
    -n) n=${2:?}; shift 2 ;;
    -r) reps=${2:?}; shift 2 ;;
    --tport) tport=${2:?}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "$0: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
    esac
done
if [ ${#models[@]} -eq 0 ]; then
    usage >&2
    exit 2
fi
if [ ! -x "$tport" ]; then
    echo "$0: $tport is not an executable (build first, or pass --tport)" >&2
    exit 1
fi
if [ "$p" -le 0 ] && [ "$n" -le 0 ]; then
    echo "$0: nothing to measure (-p 0 and -n 0)" >&2
    exit 2
fi
test_key=pp
[ "$p" -gt 0 ] || test_key=tg

work=$(mktemp -d "${TMPDIR:-/tmp}/two-copies.XXXXXX")
trap 'rm -rf "$work"' EXIT

# rate FILE: the median rate of the test in a tport bench --json output
rate() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["median_ts"])' "$1" "$test_key" \
        2>/dev/null || echo nan
}

bench() { # bench THREADS OUT
    "$tport" bench -m "$m" -t "$1" -p "$p" -n "$([ "$p" -gt 0 ] && echo 0 || echo "$n")" -r "$reps" --json \
        >"$2" 2>/dev/null
}

echo "| model | test | 1 thread alone t/s | two 1-thread copies, sum t/s | 2 threads t/s | ceiling (copies / alone) | 2t / 1t | 2t / copies |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for m in "${models[@]}"; do
    if [ ! -r "$m" ]; then
        echo "$0: cannot read $m" >&2
        continue
    fi
    : >"$work/samples"
    for r in $(seq "$rounds"); do
        bench 1 "$work/alone.json"
        bench 1 "$work/c1.json" &
        bench 1 "$work/c2.json" &
        wait
        bench 2 "$work/two.json"
        echo "$(rate "$work/alone.json") $(rate "$work/c1.json") $(rate "$work/c2.json") $(rate "$work/two.json")" \
            >>"$work/samples"
        echo "$(basename "$m") round $r: $(tail -1 "$work/samples")" >&2
    done
    label=$test_key$([ "$p" -gt 0 ] && echo "$p" || echo "$n")
    python3 - "$work/samples" "$(basename "$m")" "$label" <<'PY'
import math, statistics, sys
rows = [[float(x) for x in line.split()] for line in open(sys.argv[1]) if line.strip()]
rows = [r for r in rows if not any(math.isnan(x) for x in r)]
if not rows:
    print(f"| {sys.argv[2]} | {sys.argv[3]} | - | - | - | - | - | - |")
    sys.exit(0)
alone = statistics.median(r[0] for r in rows)
copies = statistics.median(r[1] + r[2] for r in rows)
two = statistics.median(r[3] for r in rows)
print(f"| {sys.argv[2]} | {sys.argv[3]} | {alone:.2f} | {copies:.2f} | {two:.2f} | "
      f"{copies / alone:.2f} | {two / alone:.2f} | {two / copies:.2f} |")
PY
done
