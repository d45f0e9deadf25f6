#!/usr/bin/env bash
# bench/vs-llamacpp.sh — tensorport against llama.cpp on the same GGUF files.
#
# For every model and thread count it runs llama-bench and `tport bench`
# back to back (alternating, --rounds times), with the same prompt length,
# generation length, repetitions and thread count, then prints the median
# tokens/s of each and the ratio tensorport/llama.cpp for prompt processing
# (ppP) and generation (tgN).  Both tools use llama-bench's definitions:
# ppP = P tokens in one batch from an empty cache, tgN = N single-token
# evaluations from an empty cache, each after one warm-up run.
#
# Needs: llama-bench (env LLAMA_BENCH, default
# /work/ext/llama.cpp/build/bin/llama-bench), the tport tool (env TPORT or
# --tport, default build/tport beside this folder) and python3 (parsing the
# two JSON outputs).  Exits non-zero, saying what is missing, when any of
# them is absent, and non-zero when any single run failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

usage() {
    cat <<USAGE
usage: $0 [options] MODEL.gguf [MODEL.gguf ...]
  -t, --threads LIST   comma-separated thread counts (default 1)
  -p N                 prompt tokens, ppN (default 512)
  -n N                 generated tokens, tgN (default 128)
  -r N                 repetitions inside each tool run (default 3)
  --rounds N           alternating llama.cpp/tensorport runs (default 2)
  --tport PATH         the tport tool (default \$TPORT or $root/build/tport)
  --log DIR            keep every raw output in DIR (default: a temp dir)
env: LLAMA_BENCH=path/to/llama-bench  TPORT=path/to/tport
USAGE
}

threads=1 p=512 n=128 reps=3 rounds=2
tport=${TPORT:-$root/build/tport}
llama_bench=${LLAMA_BENCH:-/work/ext/llama.cpp/build/bin/llama-bench}
logdir=
models=()
while [ $# -gt 0 ]; do
    case "$1" in
    -t | --threads) threads=${2:?}; shift 2 ;;
    -p) p=${2:?}; shift 2 ;;
    -n) n=${2:?}; shift 2 ;;
    -r) reps=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --tport) tport=${2:?}; shift 2 ;;
    --log) logdir=${2:?}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "vs-llamacpp: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
    esac
done

missing=0
if [ ${#models[@]} -eq 0 ]; then
    echo "vs-llamacpp: no model given" >&2; usage >&2; exit 2
fi
if [ ! -x "$llama_bench" ]; then
    echo "vs-llamacpp: llama-bench not found at '$llama_bench'." >&2
    echo "  Build it (see bench/README.md, 'Comparing with llama.cpp') and set LLAMA_BENCH=/path/to/llama-bench." >&2
    missing=1
fi
if [ ! -x "$tport" ]; then
    echo "vs-llamacpp: tport tool not found at '$tport'." >&2
    echo "  Build it with 'make build' or pass --tport PATH (or set TPORT)." >&2
    missing=1
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "vs-llamacpp: python3 not found (needed to read the JSON outputs)." >&2
    missing=1
fi
for m in "${models[@]}"; do
    if [ ! -r "$m" ]; then
        echo "vs-llamacpp: model file '$m' not readable." >&2
        missing=1
    fi
done
for v in "$p" "$n" "$reps" "$rounds"; do
    case "$v" in '' | *[!0-9]*) echo "vs-llamacpp: '$v' is not a number" >&2; exit 2 ;; esac
done
[ "$missing" -eq 0 ] || exit 1

if [ -z "$logdir" ]; then
    logdir=$(mktemp -d "${TMPDIR:-/tmp}/vs-llamacpp.XXXXXX")
fi
mkdir -p "$logdir"
echo "vs-llamacpp: raw outputs in $logdir" >&2

# The machine's state goes into the table's header: on a shared machine
# the load average says how far the numbers can be trusted.
loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }
load_start=$(loadavg)
started=$(date -u +%Y-%m-%dT%H:%MZ)

failed=0
results="$logdir/runs.tsv"   # model threads tool round json-file
: >"$results"
IFS=, read -r -a thread_list <<<"$threads"
for m in "${models[@]}"; do
    base=$(basename "$m")
    for t in "${thread_list[@]}"; do
        for ((r = 1; r <= rounds; r++)); do
            lj="$logdir/$base.t$t.r$r.llama.json"
            echo "vs-llamacpp: $base threads=$t round $r/$rounds: llama-bench" >&2
            if "$llama_bench" -m "$m" -t "$t" -p "$p" -n "$n" -r "$reps" -o json \
                >"$lj" 2>"$lj.stderr"; then
                printf '%s\t%s\tllama\t%s\t%s\n' "$m" "$t" "$r" "$lj" >>"$results"
            else
                echo "vs-llamacpp: llama-bench failed on $base (see $lj.stderr)" >&2
                failed=1
            fi
            tj="$logdir/$base.t$t.r$r.tport.json"
            echo "vs-llamacpp: $base threads=$t round $r/$rounds: tport bench" >&2
            if "$tport" bench -m "$m" --threads "$t" -p "$p" -n "$n" -r "$reps" --json \
                >"$tj" 2>"$tj.stderr"; then
                printf '%s\t%s\ttport\t%s\t%s\n' "$m" "$t" "$r" "$tj" >>"$results"
            else
                echo "vs-llamacpp: tport bench failed on $base: $(tail -n 1 "$tj.stderr")" >&2
                failed=1
            fi
        done
    done
done

echo "<!-- $started to $(date -u +%H:%MZ); $("$tport" --version 2>/dev/null); load average at start $load_start, at end $(loadavg) -->"
# Medians over every sample of every round; the ratio is tensorport/llama.cpp.
python3 - "$results" "$p" "$n" <<'PY' || failed=1
import json, statistics, sys

runs_file, P, N = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
samples = {}   # (model, threads, tool, test) -> [t/s]
info = {}
order = []
for line in open(runs_file):
    model, threads, tool, _round, path = line.rstrip("\n").split("\t")
    key = (model, int(threads))
    if key not in order:
        order.append(key)
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"vs-llamacpp: cannot read {path}: {e}", file=sys.stderr)
        continue
    if tool == "llama":
        for test in doc:
            if test.get("n_prompt", 0) > 0 and test.get("n_gen", 0) == 0:
                name = f"pp{test['n_prompt']}"
            elif test.get("n_gen", 0) > 0 and test.get("n_prompt", 0) == 0:
                name = f"tg{test['n_gen']}"
            else:
                continue
            samples.setdefault(key + ("llama", name), []).extend(test["samples_ts"])
            info["llama"] = "llama.cpp build %s (%s), %s" % (
                test.get("build_number", "?"), test.get("build_commit", "?"),
                test.get("cpu_info", "?"))
    else:
        for part in ("pp", "tg"):
            if part in doc:
                name = f"{part}{doc[part]['n_tokens']}"
                samples.setdefault(key + ("tport", name), []).extend(doc[part]["samples_ts"])
        if "bytes_per_token" in doc:
            info[key + ("bytes",)] = doc["bytes_per_token"]

def med(key):
    v = samples.get(key)
    return statistics.median(v) if v else None

def fmt(x):
    return "-" if x is None else f"{x:.2f}"

if "llama" in info:
    print(f"<!-- {info['llama']} -->")
print("| model | threads | test | llama.cpp t/s | tensorport t/s | ratio tport/llama | tport GB/s |")
print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
missing = False
for model, threads in order:
    for name in (f"pp{P}", f"tg{N}"):
        if (name == f"pp{P}" and P == 0) or (name == f"tg{N}" and N == 0):
            continue
        lm = med((model, threads, "llama", name))
        tm = med((model, threads, "tport", name))
        ratio = tm / lm if lm and tm else None
        gbs = None
        b = info.get((model, threads, "bytes"))
        if name.startswith("tg") and tm and b:
            gbs = tm * b / 1e9
        if lm is None or tm is None:
            missing = True
        name_col = model.rsplit("/", 1)[-1]
        print(f"| {name_col} | {threads} | {name} | {fmt(lm)} | {fmt(tm)} | {fmt(ratio)} | {fmt(gbs)} |")
sys.exit(1 if missing else 0)
PY
exit $failed
