#!/bin/sh
# A plug-in that runs only part of a model must still give the CPU-only
# ids (DESIGN.md, "Scheduling": placement never produces a plan that no
# backend can run).  The opaque test device claims one of four subsets of
# the work, in host memory (it negotiates ABI 1.0) or in memory of its own
# (1.1), in-process or isolated in a helper process, with an f16 or an f32
# KV cache, over three models; every cell must print the ids of the run
# without it, and --plan must show the plug-in holding what it took.  The
# device records a program per graph key and replays it, as a real one
# would (TPORT_OPAQUE_RECORD).
#
# usage: partial_plugin_matrix.sh TPORT OPAQUE_PLUGIN SHARED_DIR
set -u
tport=$1 plugin=$2 shared=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

models="$shared/models/stories260K.bin $shared/models/llama-2-tiny-random.gguf"
for m in $models; do
    if [ ! -f "$m" ]; then
        echo "skipped: $m is not there"
        exit 0
    fi
done
if ! "$tport" synth --type q8_0 --dim 128 --layers 2 --heads 4 --kv-heads 2 --ff 256 --seed 7 \
        -o "$tmp/synth-q8_0.gguf" >/dev/null 2>"$tmp/err"; then
    echo "synth failed: $(cat "$tmp/err")"
    exit 1
fi
models="$models $tmp/synth-q8_0.gguf"

run() { # run MODEL KV [extra args]: the ids on stdout, errors in $tmp/err
    model=$1 kv=$2
    shift 2
    "$tport" run -m "$model" --prompt-ids 1,5,9,12 -n 12 --ids --temp 0 --threads 1 --kv-type "$kv" "$@" \
        2>"$tmp/err"
}

passed=0 failed=0
for model in $models; do
    for kv in f16 f32; do
        ref=$(unset TPORT_BACKEND_PATH TPORT_BACKEND; run "$model" "$kv") || {
            echo "FAIL reference run of $(basename "$model") kv $kv: $(cat "$tmp/err")"
            exit 1
        }
        for subset in mulmat-f32 mulmat-add-mul no-cpy no-f16; do
            for memory in host device; do
                hm=0
                [ "$memory" = host ] && hm=1
                for where in in-process isolated; do
                    iso=""
                    [ "$where" = isolated ] && iso="--isolate opaque"
                    cell="$(basename "$model") kv=$kv subset=$subset memory=$memory $where"
                    # shellcheck disable=SC2086
                    out=$(TPORT_BACKEND_PATH=$plugin TPORT_BACKEND=opaque,cpu TPORT_OPAQUE_SUBSET=$subset \
                        TPORT_OPAQUE_HOST_MEMORY=$hm TPORT_OPAQUE_RECORD=1 TPORT_ISOLATE_ENV=TPORT_OPAQUE_SUBSET,TPORT_OPAQUE_HOST_MEMORY,TPORT_OPAQUE_RECORD \
                        run "$model" "$kv" $iso)
                    rc=$?
                    if [ $rc -ne 0 ] || [ "$out" != "$ref" ]; then
                        echo "FAIL $cell: rc $rc"
                        echo "  cpu only: $ref"
                        echo "  with it:  $out"
                        sed 's/^/  /' "$tmp/err"
                        failed=$((failed + 1))
                        continue
                    fi
                    # the plan names the plug-in for what it ran
                    # shellcheck disable=SC2086
                    TPORT_BACKEND_PATH=$plugin TPORT_BACKEND=opaque,cpu TPORT_OPAQUE_SUBSET=$subset \
                        TPORT_OPAQUE_HOST_MEMORY=$hm TPORT_OPAQUE_RECORD=1 TPORT_ISOLATE_ENV=TPORT_OPAQUE_SUBSET,TPORT_OPAQUE_HOST_MEMORY,TPORT_OPAQUE_RECORD \
                        run "$model" "$kv" $iso --plan >/dev/null
                    plan=$(cat "$tmp/err")
                    if ! printf '%s\n' "$plan" | grep -q "opaque.*mul_mat"; then
                        echo "FAIL $cell: --plan does not show opaque running mul_mat:"
                        printf '%s\n' "$plan" | sed 's/^/  /'
                        failed=$((failed + 1))
                        continue
                    fi
                    # a device that attends but does not copy keeps the
                    # cache: the host uploads the new rows alone, never
                    # the whole cache (stories260K: 2 x 5 x 64 KiB)
                    if [ "$subset" = no-cpy ] && [ "$memory" = device ] && ! printf '%s\n' "$plan" |
                            grep -Eq "staged uploads? \(([0-9]+ B|[0-9](\.[0-9])? KiB)\)"; then
                        echo "FAIL $cell: more than 10 KiB uploaded per token:"
                        printf '%s\n' "$plan" | grep "last evaluation" | sed 's/^/  /'
                        failed=$((failed + 1))
                        continue
                    fi
                    passed=$((passed + 1))
                done
            done
        done
    done
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
