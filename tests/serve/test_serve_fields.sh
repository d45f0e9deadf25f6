#!/usr/bin/env bash
# tport serve's request fields: the penalties change greedy output, the
# same way every time and as `tport run` does with the same penalties; a
# field the server does not implement is answered 400 in OpenAI's error
# shape naming it, unless it holds its default (which clients send).
. "$(dirname "$0")/serve_lib.sh"

start_server --ctx 512
PROMPT="Once upon a time"
# greedy, 24 tokens: this tiny random model falls into a loop that the
# penalties must break
complete() { # complete EXTRA-JSON-FIELDS: the text of a greedy completion
    http POST /v1/completions "{\"prompt\":\"$PROMPT\",\"max_tokens\":24,\"temperature\":0$1}" >/dev/null
    jget 'j.choices[0].text'
}
run_text() { # run_text RUN-OPTIONS...: tport run's text for the same prompt
    local out
    out=$("$TPORT_CLI" run -m "$MODEL" -p "$PROMPT" -n 24 --temp 0 --threads 1 --ctx 512 "$@" 2>/dev/null)
    printf '%s\n' "${out:${#PROMPT}}"
}

# ---- penalties
PLAIN=$(complete "")
[ -n "$PLAIN" ]
check "plain greedy completion has text" $?
expect_eq "plain greedy completion = tport run" "$PLAIN" "$(run_text)"
for case in "presence_penalty:1.5:--presence-penalty" "frequency_penalty:1.5:--frequency-penalty" \
            "repeat_penalty:1.5:--repeat-penalty" "frequency_penalty:-2:--frequency-penalty"; do
    IFS=: read -r field value opt <<<"$case"
    A=$(complete ",\"$field\":$value")
    B=$(complete ",\"$field\":$value")
    [ "$A" != "$PLAIN" ]
    check "$field $value changes the greedy text" $?
    expect_eq "$field $value: the same text again" "$B" "$A"
    expect_eq "$field $value: the text of tport run $opt $value" "$A" "$(run_text "$opt" "$value")"
done
# the window: repeat_last_n 0 turns the penalties off, as in llama-server
expect_eq "repeat_last_n 0: no penalty" "$(complete ',"presence_penalty":1.5,"repeat_last_n":0')" "$PLAIN"
W=$(complete ',"frequency_penalty":1,"presence_penalty":0.5,"repeat_last_n":4')
expect_eq "repeat_last_n 4 = tport run --repeat-last-n 4" "$W" \
    "$(run_text --frequency-penalty 1 --presence-penalty 0.5 --repeat-last-n 4)"
# chat takes them too, streaming or not, with the same text
CHAT='{"messages":[{"role":"user","content":"Hi"}],"max_tokens":16,"temperature":0'
http POST /v1/chat/completions "$CHAT}" >/dev/null
C0=$(jget 'j.choices[0].message.content')
# (a negative presence penalty favours what was seen: the prompt counts, as
# in llama-server, so the user's "Hi" comes back)
http POST /v1/chat/completions "$CHAT,\"presence_penalty\":-2}" >/dev/null
C1=$(jget 'j.choices[0].message.content')
[ "$C0" != "$C1" ] && grep -q Hi <<<"$C1" && ! grep -q Hi <<<"$C0"
check "chat: presence_penalty -2 brings back the prompt's tokens" $?
curl -sN "$URL/v1/chat/completions" -d "$CHAT,\"presence_penalty\":-2,\"stream\":true}" >"$WORK/sse"
C2=$(node -e 'const ev = require("fs").readFileSync(process.argv[1], "utf8").split("\n")
                .filter(l => l.startsWith("data: {")).map(l => JSON.parse(l.slice(6)));
              console.log(ev.filter(e => e.choices.length).map(e => e.choices[0].delta.content || "").join(""));' "$WORK/sse")
expect_eq "chat stream with penalties = chat" "$C2" "$C1"

# ---- ignore_eos (llama-server's): an end of text forced by a bias ends the
# reply at once; with ignore_eos it is never sampled, and the reply runs to
# max_tokens with the plain text (the model's EOS is id 2)
EOS_FIRST=',"logit_bias":{"2":100}'
complete "$EOS_FIRST" >/dev/null
expect_eq "EOS forced by a bias: the reply stops at once" "$(jget 'j.choices[0].finish_reason + " " + j.usage.completion_tokens')" "stop 0"
expect_eq "ignore_eos: the same bias never stops it" "$(complete "$EOS_FIRST,\"ignore_eos\":true")" "$PLAIN"
expect_eq "ignore_eos: max_tokens reached" "$(jget 'j.choices[0].finish_reason + " " + j.usage.completion_tokens')" "length 24"

# ---- refused: 400, an OpenAI error object whose param and message name the
# field (the message names the schema keyword or grammar rule too)
refused() { # refused ENDPOINT FIELD JSON-VALUE
    local base path
    if [ "$1" = chat ]; then
        base='{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2'
        path=/v1/chat/completions
    else
        base='{"prompt":"Hi","max_tokens":2'
        path=/v1/completions
    fi
    local got
    got=$(http POST "$path" "$base,\"$2\":$3}")
    local shape
    shape=$(jget 'typeof j.error === "object" && j.error.type === "invalid_request_error" && j.error.code === 400 &&
                  j.error.message.includes("'"'$2'"'") ? j.error.param : "bad shape: " + JSON.stringify(j)')
    expect_eq "$1 $2=$3 -> 400 naming it" "$got $shape" "400 $2"
}
for ep in chat completion; do
    refused $ep n 17
    refused $ep logit_bias '{"x":-100}'
    refused $ep response_format '{"type":"xml"}'
    refused $ep response_format '{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","patternProperties":{}}}}'
    refused $ep tools '[{"type":"function","function":{"parameters":{}}}]'
    refused $ep tool_choice '"required"'
    refused $ep best_of 2
    refused $ep echo true
    refused $ep suffix '"the end"'
    refused $ep json_schema '{"type":"object","if":{}}'
    refused $ep grammar '"root ::= missing"'
done
refused completion logprobs 21
refused chat top_logprobs 3
refused chat functions '[{"name":"f","parameters":{}}]'
refused chat modalities '["text","audio"]'
refused chat audio '{"voice":"alloy","format":"wav"}'
refused chat web_search_options '{}'
# (this model has no template of its own: tools are refused, see test_serve_tools.sh)
http POST /v1/chat/completions '{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"1"}],"max_tokens":2}' >/dev/null
expect_eq "a tool-call conversation without a template -> 400" "$(jget j.error.param)" messages

# ---- the defaults pass: the body LangChain's ChatOpenAI sends, and more
DEFAULTS='"n":1,"logprobs":false,"top_logprobs":0,"logit_bias":{},"response_format":{"type":"text"},"tools":[],"tool_choice":"none","parallel_tool_calls":true,"presence_penalty":0,"frequency_penalty":0,"top_p":1,"seed":null,"user":"u-7","model":"gpt-4o-mini","store":false,"metadata":{"a":"b"},"stream_options":null,"modalities":["text"],"audio":null,"service_tier":"auto"'
expect_eq "chat with every default -> 200" "$(http POST /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":2,$DEFAULTS}")" 200
expect_eq "completion with every default -> 200" "$(http POST /v1/completions "{\"prompt\":\"Hi\",\"max_tokens\":2,\"best_of\":1,\"echo\":false,\"suffix\":null,\"logprobs\":null,$DEFAULTS}")" 200
# defaults change nothing: the greedy text equals the plain one
expect_eq "defaults leave the greedy text alone" "$(complete ",\"n\":1,\"logit_bias\":{},\"presence_penalty\":0,\"frequency_penalty\":0,\"repeat_penalty\":1")" "$PLAIN"
expect_eq "still serving" "$(http GET /health)" 200
stop_server
finish
