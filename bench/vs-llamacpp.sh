#!/usr/bin/env bash
# bench/vs-llamacpp.sh — tensorport against llama.cpp-family peers on the
# same GGUF files.
#
# For every model and thread count it runs each peer's llama-bench and
# `tport bench` back to back (alternating, --rounds times), with the same
# prompt length, generation length, depth, repetitions and thread count,
# then prints the median tokens/s of each and the ratio tensorport / the
# fastest peer for prompt processing (ppP) and generation (tgN).  All use
# llama-bench's definitions: ppP = P tokens in one batch, tgN = N
# single-token evaluations, each after one warm-up run, from a cache
# holding D tokens (-d D, default 0 = empty).
#
# Peers: --peer NAME=COMMAND (repeatable; COMMAND is a llama-bench path,
# optionally followed by extra arguments, e.g. 'ik-rtr=/path/llama-bench
# -rtr 1').  Without --peer: llama.cpp=$LLAMA_BENCH (default
# /work/ext/llama.cpp/build/bin/llama-bench).  A llama-bench without -d
# (ik_llama.cpp's) measures generation at depth with its -gp D,N and has
# no prompt processing at depth (that cell shows '-').
#
# With GNU time (/usr/bin/time) a second table gives each tool's peak
# resident memory (max RSS of the whole process, the largest over rounds).
#
# Needs: the peers, the tport tool (env TPORT or --tport, default
# build/tport beside this folder) and python3 (parsing the JSON outputs).
# Exits non-zero, saying what is missing, when any of them is absent, and
# non-zero when any single run failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

usage() {
    cat <<USAGE
usage: $0 [options] MODEL.gguf [MODEL.gguf ...]
  -t, --threads LIST   comma-separated thread counts (default 1)
  -p N                 prompt tokens, ppN (default 512)
  -n N                 generated tokens, tgN (default 128)
  -d N                 depth: tokens in the cache before each test (default 0)
  -r N                 repetitions inside each tool run (default 3)
  --rounds N           alternating llama.cpp/tensorport runs (default 2)
  --tport PATH         the tport tool (default \$TPORT or $root/build/tport)
  --peer NAME=CMD      a llama-bench to compare with, CMD = path [extra args];
                       repeatable (default llama.cpp=\$LLAMA_BENCH)
  --log DIR            keep every raw output in DIR (default: a temp dir)
env: LLAMA_BENCH=path/to/llama-bench  TPORT=path/to/tport
USAGE
}

threads=1 p=512 n=128 d=0 reps=3 rounds=2
tport=${TPORT:-$root/build/tport}
llama_bench=${LLAMA_BENCH:-/work/ext/llama.cpp/build/bin/llama-bench}
logdir=
models=()
peer_names=()
peer_cmds=()
while [ $# -gt 0 ]; do
    case "$1" in
    -t | --threads) threads=${2:?}; shift 2 ;;
    -p) p=${2:?}; shift 2 ;;
    -n) n=${2:?}; shift 2 ;;
    -d) d=${2:?}; shift 2 ;;
    --peer)
        spec=${2:?}
        case "$spec" in *=?*) ;; *) echo "vs-llamacpp: --peer needs NAME=COMMAND" >&2; exit 2 ;; esac
        peer_names+=("${spec%%=*}"); peer_cmds+=("${spec#*=}"); shift 2 ;;
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
if [ ${#peer_names[@]} -eq 0 ]; then
    peer_names=(llama.cpp); peer_cmds=("$llama_bench")
fi
for i in "${!peer_names[@]}"; do
    read -r -a words <<<"${peer_cmds[$i]}"
    if [ ${#words[@]} -eq 0 ] || [ ! -x "${words[0]}" ]; then
        echo "vs-llamacpp: llama-bench of peer '${peer_names[$i]}' not found at '${words[0]:-}'." >&2
        echo "  Build it (see bench/README-llamacpp.md) and pass --peer NAME=/path/to/llama-bench (or set LLAMA_BENCH)." >&2
        missing=1
    fi
    case "${peer_names[$i]}" in *[!A-Za-z0-9._-]*) echo "vs-llamacpp: peer name '${peer_names[$i]}' must be [A-Za-z0-9._-]" >&2; exit 2 ;; esac
done
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
for v in "$p" "$n" "$d" "$reps" "$rounds"; do
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

# How each peer measures at depth: llama.cpp's llama-bench has -d,
# ik_llama.cpp's has -gp D,N (generation after a D-token prompt) instead.
peer_depth_style=()
for i in "${!peer_names[@]}"; do
    read -r -a words <<<"${peer_cmds[$i]}"
    style=d
    if [ "$d" -gt 0 ] && ! "${words[0]}" --help 2>&1 | grep -q -- '--n-depth'; then
        style=gp
    fi
    peer_depth_style+=("$style")
done

# Peak RSS through GNU time when it is there (bash's `time` has no %M).
timer=()
if [ -x /usr/bin/time ] && /usr/bin/time -f %M true >/dev/null 2>&1; then
    timer=(/usr/bin/time -f %M -o)
fi
timed() { # timed RSS-FILE COMMAND...: runs COMMAND, its peak RSS (KiB) into RSS-FILE
    local out=$1
    shift
    if [ ${#timer[@]} -gt 0 ]; then "${timer[@]}" "$out" "$@"; else "$@"; fi
}

failed=0
results="$logdir/runs.tsv"   # model threads tool round json-file
: >"$results"
IFS=, read -r -a thread_list <<<"$threads"
for m in "${models[@]}"; do
    base=$(basename "$m")
    for t in "${thread_list[@]}"; do
        for ((r = 1; r <= rounds; r++)); do
            for i in "${!peer_names[@]}"; do
                name=${peer_names[$i]}
                read -r -a words <<<"${peer_cmds[$i]}"
                lj="$logdir/$base.t$t.r$r.$name.json"
                if [ "$d" -eq 0 ]; then
                    depth_args=(-p "$p" -n "$n")
                elif [ "${peer_depth_style[$i]}" = d ]; then
                    depth_args=(-p "$p" -n "$n" -d "$d")
                else
                    depth_args=(-p 0 -n 0 -gp "$d,$n")
                fi
                echo "vs-llamacpp: $base threads=$t round $r/$rounds: $name" >&2
                if timed "$lj.rss" "${words[@]}" -m "$m" -t "$t" "${depth_args[@]}" -r "$reps" -o json \
                    >"$lj" 2>"$lj.stderr"; then
                    printf '%s\t%s\t%s\t%s\t%s\n' "$m" "$t" "$name" "$r" "$lj" >>"$results"
                else
                    echo "vs-llamacpp: $name failed on $base (see $lj.stderr)" >&2
                    failed=1
                fi
            done
            tj="$logdir/$base.t$t.r$r.tport.json"
            echo "vs-llamacpp: $base threads=$t round $r/$rounds: tport bench" >&2
            if timed "$tj.rss" "$tport" bench -m "$m" --threads "$t" -p "$p" -n "$n" -d "$d" -r "$reps" --json \
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
python3 - "$results" "$p" "$n" "$d" "${peer_names[@]}" <<'PY' || failed=1
import json, statistics, sys

runs_file, P, N, D = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
peers = sys.argv[5:]
samples = {}   # (model, threads, tool, test) -> [t/s]
rss = {}       # (model, threads, tool) -> peak RSS in KiB
info = {}
order = []
for line in open(runs_file):
    model, threads, tool, _round, path = line.rstrip("\n").split("\t")
    key = (model, int(threads))
    if key not in order:
        order.append(key)
    try:
        kib = int(open(path + ".rss").read().split()[-1])
        rss[key + (tool,)] = max(rss.get(key + (tool,), 0), kib)
    except (OSError, ValueError, IndexError):
        pass
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"vs-llamacpp: cannot read {path}: {e}", file=sys.stderr)
        continue
    if tool != "tport":
        for test in doc:
            npr, ngen = test.get("n_prompt", 0), test.get("n_gen", 0)
            label = str(test.get("test", ""))
            if ngen > 0 and "@pp" in label:          # ik_llama.cpp -gp D,N
                name, ntok = f"tg{ngen}", ngen
            elif npr > 0 and ngen == 0:
                name, ntok = f"pp{npr}", npr
            elif ngen > 0 and npr == 0:
                name, ntok = f"tg{ngen}", ngen
            else:
                continue
            ts = test.get("samples_ts")
            if ts is None:
                ts = [1e9 * ntok / ns for ns in test.get("samples_ns", []) if ns > 0]
            samples.setdefault(key + (tool, name), []).extend(ts)
            info[tool] = "%s: build %s (%s), %s" % (tool, test.get("build_number", "?"),
                                                   test.get("build_commit", "?"), test.get("cpu_info", "?"))
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

for peer in peers:
    if peer in info:
        print(f"<!-- {info[peer]} -->")
at = f" @ d{D}" if D else ""
many = len(peers) > 1
ratio_head = "ratio tport/best peer" if many else f"ratio tport/{peers[0]}"
print("| model | threads | test | " + " | ".join(f"{p} t/s" for p in peers) +
      f" | tensorport t/s | {ratio_head} | tport GB/s |")
print("| --- | ---: | --- | " + " | ".join("---:" for _ in peers) + " | ---: | ---: | ---: |")
missing = False
for model, threads in order:
    for name in (f"pp{P}", f"tg{N}"):
        if (name == f"pp{P}" and P == 0) or (name == f"tg{N}" and N == 0):
            continue
        pm = [med((model, threads, peer, name)) for peer in peers]
        tm = med((model, threads, "tport", name))
        known = [x for x in pm if x]
        best = max(known) if known else None
        ratio = tm / best if best and tm else None
        gbs = None
        b = info.get((model, threads, "bytes"))
        if name.startswith("tg") and tm and b:
            gbs = tm * b / 1e9
        if tm is None or not known:
            missing = True
        name_col = model.rsplit("/", 1)[-1]
        print(f"| {name_col} | {threads} | {name}{at} | " + " | ".join(fmt(x) for x in pm) +
              f" | {fmt(tm)} | {fmt(ratio)} | {fmt(gbs)} |")
if rss:
    print()
    print("| model | threads | " + " | ".join(f"{p} peak RSS MiB" for p in peers) +
          " | tensorport peak RSS MiB | ratio tport/smallest peer |")
    print("| --- | ---: | " + " | ".join("---:" for _ in peers) + " | ---: | ---: |")
    for model, threads in order:
        pr = [rss.get((model, threads, peer)) for peer in peers]
        tr = rss.get((model, threads, "tport"))
        known = [x for x in pr if x]
        r = tr / min(known) if tr and known else None
        mib = lambda x: "-" if x is None else f"{x / 1024:.0f}"
        print(f"| {model.rsplit('/', 1)[-1]} | {threads} | " + " | ".join(mib(x) for x in pr) +
              f" | {mib(tr)} | {fmt(r)} |")
sys.exit(1 if missing else 0)
PY
exit $failed
