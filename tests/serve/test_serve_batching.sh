#!/usr/bin/env bash
# tport serve's continuous batching: with --parallel 4, requests that run at
# the same time generate in shared steps (one evaluation for the tokens and
# prompt chunks of every busy slot, tport_batch_eval; the prompts are longer
# than a chunk of 64 here: a long one joins the running batch in several
# steps), and each answer is exactly the
# one it gets alone, greedy or sampled with a seed, streamed or not.  The
# model is synthesized with q8_0 weights, for which a batched step gives
# each session the bits it gets alone (tests/model/test_batch_eval.c), with
# the tiny model's vocabulary, wide enough that the requests overlap.
. "$(dirname "$0")/serve_lib.sh"

BATCH_MODEL="$WORK/batch-q8.gguf"
"$TPORT_CLI" synth --vocab-from "$MODEL" --dim 128 --layers 4 --heads 4 --kv-heads 2 --ff 256 --ctx 512 \
    --type q8_0 --seed 11 --out-gain 4 -o "$BATCH_MODEL" >/dev/null
check "synthesized the model" $?
MODEL=$BATCH_MODEL
start_server --parallel 4 --queue 8 --ctx 256 --threads 2

LONG=$(printf 'and then the cat sat on the mat %.0s' $(seq 1 12))
PROMPTS=("Once upon a time" "The little dog ran to the $LONG" "In a land far away there lived a king who"
         "Hello" "She opened the door and saw" "One day Tim found a big red ball in the park and $LONG")
body() { # body INDEX STREAM: greedy for even indices, sampled with a seed for odd ones
    local temp=0
    [ $(($1 % 2)) = 1 ] && temp=0.9
    printf '{"prompt":"%s","max_tokens":48,"temperature":%s,"seed":%d,"stream":%s}' "${PROMPTS[$1]}" "$temp" \
        $((100 + $1)) "$2"
}
ask() { # ask INDEX STREAM OUT
    curl -s -o "$3" -X POST -H 'Content-Type: application/json' --data-binary "$(body "$1" "$2")" \
        "$URL/v1/completions"
}
text_of() { # text_of FILE STREAM
    if [ "$2" = true ]; then sse_text "$1"; else jget 'j.choices[0].text' "$1"; fi
}

# one at a time: the references
for i in "${!PROMPTS[@]}"; do
    ask "$i" false "$WORK/alone$i"
    [ -n "$(text_of "$WORK/alone$i" false)" ]
    check "request $i alone answers" $?
done
http GET /metrics >/dev/null
metric() { grep "^tport:$1 " "$WORK/body" | cut -d' ' -f2; }
expect_eq "alone: no step held several slots" "$(metric decode_steps_shared_total)" 0
STEPS0=$(metric decode_steps_total)
ROWS0=$(metric decode_step_tokens_total)
# each prompt alone went into the first step after its request took a slot
expect_eq "alone: requests admitted" "$(metric admitted_total)" "${#PROMPTS[@]}"
expect_eq "alone: steps from a slot taken to the prompt's first step" "$(metric admission_steps_total)" "${#PROMPTS[@]}"
ADM0=$(metric admitted_total)
ADMS0=$(metric admission_steps_total)

# all at once, twice (more requests than slots: some wait in the queue and
# join the running batch when a slot frees), every other one streamed
for round in 1 2; do
    PIDS=()
    for i in "${!PROMPTS[@]}"; do
        stream=false
        [ $(((i + round) % 2)) = 0 ] && stream=true
        echo "$stream" >"$WORK/stream$round-$i"
        ask "$i" "$stream" "$WORK/together$round-$i" &
        PIDS+=($!)
    done
    wait "${PIDS[@]}"
    for i in "${!PROMPTS[@]}"; do
        stream=$(cat "$WORK/stream$round-$i")
        expect_eq "round $round, request $i (stream $stream): the text it gets alone" \
            "$(text_of "$WORK/together$round-$i" "$stream")" "$(text_of "$WORK/alone$i" false)"
    done
done
http GET /metrics >/dev/null
SHARED=$(metric decode_steps_shared_total)
echo "steps together: $(($(metric decode_steps_total) - STEPS0)) for $(($(metric decode_step_tokens_total) - ROWS0)) tokens, $SHARED of several slots"
echo "together: $(($(metric admitted_total) - ADM0)) requests admitted after $(($(metric admission_steps_total) - ADMS0)) steps in all"
[ "$SHARED" -gt 0 ]
check "steps together held several slots' tokens" $?
expect_eq "healthy after" "$(http GET /health)" 200
stop_server
expect_eq "graceful exit" "$SERVER_RC" 0
finish
