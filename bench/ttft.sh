#!/usr/bin/env bash
# bench/ttft.sh — time to the first token from a cold start, and peak
# memory, of `tport run` next to llama.cpp's `llama-simple` on the same
# files: each run is a new process that loads the model, evaluates the
# prompt and generates one token (greedy), then exits.  The two programs
# alternate, --runs times; the table gives the median wall time from exec
# to exit, the fastest and slowest run (on a VM whose host backs new
# memory lazily, one run can take several times another), and the largest
# peak RSS (GNU time's %M).  "Cold" means a new process; the file itself
# is in the page cache after the first run (the first run of each program
# is a warm-up and is not counted).
#
# llama-simple takes no thread count: it uses llama.cpp's default (4
# threads); tport run uses --threads (default: all cores).
set -u

usage() {
    cat <<USAGE
usage: $0 [--runs N] [--prompt TEXT] [--threads N] [--tport PATH] [--simple PATH] MODEL.gguf [...]
  --runs N       measured runs of each program per model (default 5)
  --prompt TEXT  the prompt (default "Once upon a time")
  --threads N    tport's threads (default 0 = all cores)
  --tport PATH   the tport tool (default \$TPORT or build/tport beside this folder)
  --simple PATH  llama.cpp's llama-simple (default \$LLAMA_SIMPLE or
                 /work/ext/llama.cpp/build/bin/llama-simple)
Needs GNU time (/usr/bin/time) and python3.
USAGE
}

here=$(cd "$(dirname "$0")" && pwd)
runs=5 prompt="Once upon a time" threads=0
tport=${TPORT:-$(dirname "$here")/build/tport}
simple=${LLAMA_SIMPLE:-/work/ext/llama.cpp/build/bin/llama-simple}
models=()
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=${2:?}; shift 2 ;;
    --prompt) prompt=${2:?}; shift 2 ;;
    --threads) threads=${2:?}; shift 2 ;;
    --tport) tport=${2:?}; shift 2 ;;
    --simple) simple=${2:?}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "ttft: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
    esac
done
[ ${#models[@]} -gt 0 ] || { echo "ttft: no model given" >&2; usage >&2; exit 2; }
case "$runs$threads" in *[!0-9]*) echo "ttft: --runs and --threads take numbers" >&2; exit 2 ;; esac
for tool in "$tport" "$simple" /usr/bin/time; do
    [ -x "$tool" ] || { echo "ttft: '$tool' not found (see --help)" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "ttft: python3 not found" >&2; exit 1; }

log=$(mktemp -d "${TMPDIR:-/tmp}/ttft.XXXXXX")
echo "ttft: raw outputs in $log" >&2
rows="$log/rows.tsv" # model tool seconds peak-KiB
: >"$rows"
one() { # one TOOL-NAME MODEL COMMAND...: appends a row, or says what failed
    local name=$1 model=$2
    shift 2
    local t0 t1
    t0=$(date +%s%N)
    if ! /usr/bin/time -f %M -o "$log/rss" "$@" >"$log/out" 2>"$log/err"; then
        echo "ttft: $name failed on $model: $(tail -n 1 "$log/err")" >&2
        return 1
    fi
    t1=$(date +%s%N)
    printf '%s\t%s\t%s\t%s\n' "$model" "$name" "$(((t1 - t0) / 1000))" "$(tail -n 1 "$log/rss")" >>"$rows"
}
failed=0
for m in "${models[@]}"; do
    for ((r = 0; r <= runs; r++)); do
        [ "$r" -eq 0 ] && target=/dev/null || target=$rows
        rows_save=$rows rows=$target
        one tport "$m" "$tport" run -m "$m" -p "$prompt" -n 1 --temp 0 --threads "$threads" || failed=1
        one llama.cpp "$m" "$simple" -m "$m" -n 1 "$prompt" || failed=1
        rows=$rows_save
    done
done
echo "<!-- $(date -u +%Y-%m-%dT%H:%MZ); $("$tport" --version 2>/dev/null | head -n 1); load average $(cut -d' ' -f1-3 /proc/loadavg) -->"
python3 - "$rows" <<'PY' || failed=1
import statistics, sys
data = {}
order = []
for line in open(sys.argv[1]):
    model, tool, us, kib = line.rstrip("\n").split("\t")
    if model not in order:
        order.append(model)
    d = data.setdefault((model, tool), {"s": [], "kib": 0})
    d["s"].append(int(us) / 1e6)
    d["kib"] = max(d["kib"], int(kib))
print("| model | llama-simple s | tport run s | ratio tport/llama.cpp | llama-simple range s | tport range s "
      "| llama-simple peak RSS MiB | tport peak RSS MiB | ratio |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
span = lambda xs: f"{min(xs):.3f}-{max(xs):.3f}"
for m in order:
    l, t = data.get((m, "llama.cpp")), data.get((m, "tport"))
    if not l or not t:
        continue
    ls, ts = statistics.median(l["s"]), statistics.median(t["s"])
    print(f"| {m.rsplit('/', 1)[-1]} | {ls:.3f} | {ts:.3f} | {ts / ls:.2f} | {span(l['s'])} | {span(t['s'])} | "
          f"{l['kib'] / 1024:.0f} | {t['kib'] / 1024:.0f} | {t['kib'] / l['kib']:.2f} |")
PY
exit $failed
