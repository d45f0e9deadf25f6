#!/usr/bin/env bash
# tport serve with curl: every endpoint, streaming, chat templates, the
# bad-input answers, parallel slots and the queue, client disconnect, and a
# graceful stop with a stream in flight.
. "$(dirname "$0")/serve_lib.sh"

# ---- the command line: --help lists every option the parser takes; errors are one line
HELP=$("$TPORT_CLI" serve --help)
check "serve --help exits 0" $?
MISSING=""
for opt in -m --model --host --port --parallel --queue --ctx --api-key --chat-template --max-body --max-tokens \
           --alias --backend --threads --tokenizer --no-warmup; do
    grep -q -- "$opt" <<<"$HELP" || MISSING="$MISSING $opt"
done
expect_eq "--help documents every option" "$MISSING" ""
ERR=$("$TPORT_CLI" serve -m "$MODEL" --bogus 1 2>&1 >/dev/null); RC=$?
expect_eq "unknown option: one line, status 2" "$RC $(wc -l <<<"$ERR") ${ERR:0:28}" "2 1 tport: serve: unknown option"
ERR=$("$TPORT_CLI" serve -m "$MODEL" --chat-template jinja2 2>&1 >/dev/null); RC=$?
expect_eq "unknown --chat-template: status 2" "$RC ${ERR:0:46}" "2 tport: serve: unknown --chat-template 'jinja2'"

KEY=test-key-123
start_server --parallel 2 --queue 1 --ctx 2048 --max-body 65536 --api-key "$KEY"
AUTH=(-H "Authorization: Bearer $KEY")
# a token through each session before the first request (the completion
# below then checks that nothing of it stays: the same text as tport run)
grep -q "warmed up 2 sessions in" "$WORK/server.log"
check "sessions warmed up at start" $?

# ---- the endpoints
expect_eq "GET /health" "$(http GET /health)" 200
expect_eq "/health status" "$(jget j.status)" ok
expect_eq "GET /v1/models" "$(http GET /v1/models)" 200
expect_eq "/v1/models id" "$(jget 'j.data[0].id')" llama-2-tiny-random.gguf

expect_eq "POST /tokenize" "$(http POST /tokenize '{"content":"Once upon a time","add_special":true}')" 200
# the ids llama.cpp gives this prompt (../shared/models/README.md; llama-tokenize)
expect_eq "tokenize ids" "$(jget 'j.tokens.join(",")')" "1,9038,2501,263,931"
expect_eq "POST /detokenize" "$(http POST /detokenize '{"tokens":[1,9038,2501,263,931]}')" 200
expect_eq "detokenize text" "$(jget j.content)" "Once upon a time"

# ---- a plain completion, greedy: the same text as `tport run`
PROMPT="Once upon a time"
expect_eq "completion" "$(http POST /v1/completions '{"prompt":"Once upon a time","max_tokens":12,"temperature":0}')" 200
TEXT=$(jget 'j.choices[0].text')
expect_eq "completion object" "$(jget j.object)" text_completion
expect_eq "completion usage" "$(jget '[j.usage.prompt_tokens,j.usage.completion_tokens,j.usage.total_tokens].join(",")')" "5,12,17"
expect_eq "completion finish_reason" "$(jget 'j.choices[0].finish_reason')" length
RUN=$("$TPORT_CLI" run -m "$MODEL" -p "$PROMPT" -n 12 --temp 0 --threads 1 2>/dev/null)
expect_eq "greedy completion equals tport run" "$PROMPT$TEXT" "$RUN"

# the same seed gives the same sample
http POST /v1/completions '{"prompt":"Hello","max_tokens":10,"temperature":1,"seed":7}' >/dev/null
A=$(jget 'j.choices[0].text')
http POST /v1/completions '{"prompt":"Hello","max_tokens":10,"temperature":1,"seed":7}' >/dev/null
B=$(jget 'j.choices[0].text')
expect_eq "seeded sampling repeats" "$A" "$B"

# a prompt given as token ids gives what the text gives
http POST /v1/completions '{"prompt":[1,9038,2501,263,931],"max_tokens":12,"temperature":0}' >/dev/null
expect_eq "prompt as token ids" "$(jget 'j.choices[0].text')" "$TEXT"

# a stop string ends the text before it
STOP=$(node -e 'const t = process.argv[1]; console.log(t.slice(3, 6))' "$TEXT")
http POST /v1/completions "$(node -e 'console.log(JSON.stringify({prompt:"Once upon a time",max_tokens:12,temperature:0,stop:[process.argv[1]]}))' "$STOP")" >/dev/null
expect_eq "stop string cuts the text" "$(jget 'j.choices[0].text')" "$(node -e 'const t=process.argv[1],s=process.argv[2]; console.log(t.slice(0, t.indexOf(s)))' "$TEXT" "$STOP")"
expect_eq "stop string finish_reason" "$(jget 'j.choices[0].finish_reason')" stop

# ---- streaming: events token by token, the same text, then [DONE]
curl -sN "${AUTH[@]}" "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":12,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}' >"$WORK/sse"
expect_eq "stream ends with [DONE]" "$(grep '^data: ' "$WORK/sse" | tail -1)" "data: [DONE]"
STREAMED=$(node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(l => l.startsWith("data: {"));
  const ev = lines.map(l => JSON.parse(l.slice(6)));
  const text = ev.filter(e => e.choices.length).map(e => e.choices[0].text).join("");
  const fin = ev.filter(e => e.choices.length && e.choices[0].finish_reason).map(e => e.choices[0].finish_reason);
  const usage = ev.filter(e => e.usage).map(e => e.usage.completion_tokens);
  console.log(JSON.stringify([text, ev.length > 3, fin.join(), usage.join()]));' "$WORK/sse")
expect_eq "stream text, events, finish, usage" "$STREAMED" "$(node -e 'console.log(JSON.stringify([process.argv[1], true, "length", "12"]))' "$TEXT")"

# ---- chat: the default template (the model has none) is chatml, rendered
# as llama.cpp renders it; the vocabulary has no <|im_start|> token, so the
# markers count as text
CHAT='{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"max_tokens":6,"temperature":0}'
expect_eq "chat completion" "$(http POST /v1/chat/completions "$CHAT")" 200
expect_eq "chat object" "$(jget j.object)" chat.completion
expect_eq "chat role" "$(jget 'j.choices[0].message.role')" assistant
GOT=$(jget j.usage.prompt_tokens)
http POST /tokenize "$(node -e 'console.log(JSON.stringify({add_special:true, content:"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"}))')" >/dev/null
expect_eq "chatml prompt tokens" "$GOT" "$(jget j.tokens.length)"
curl -sN "${AUTH[@]}" "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":5,"stream":true}' >"$WORK/sse"
expect_eq "chat stream first delta has the role" "$(grep -m1 '^data: {' "$WORK/sse" | cut -c7- | jget 'j.choices[0].delta.role' /dev/stdin)" assistant
expect_eq "chat stream ends with [DONE]" "$(grep '^data: ' "$WORK/sse" | tail -1)" "data: [DONE]"

# ---- bad input: status and an OpenAI error object, and the server goes on
bad() { # bad NAME STATUS METHOD PATH BODY [curl args]
    local name=$1 want=$2
    shift 2
    local got
    got=$(http "$@")
    local type
    type=$(jget 'typeof j.error.message === "string" && j.error.code === '"$want"' ? j.error.type : "no error object"' 2>/dev/null)
    expect_eq "$name -> $want" "$got $([ -n "$type" ] && [ "$type" != "no error object" ] && echo json || echo "$type")" "$want json"
}
bad "malformed JSON" 400 POST /v1/completions '{"prompt": "x", '
bad "not an object" 400 POST /v1/completions '[1,2,3]'
bad "empty body" 400 POST /v1/chat/completions '' -H 'Content-Type: application/json'
bad "missing prompt" 400 POST /v1/completions '{"max_tokens":3}'
bad "prompt of wrong type" 400 POST /v1/completions '{"prompt":{"a":1}}'
bad "max_tokens a string" 400 POST /v1/completions '{"prompt":"x","max_tokens":"5"}'
bad "max_tokens 0" 400 POST /v1/completions '{"prompt":"x","max_tokens":0}'
bad "max_tokens beyond the context" 400 POST /v1/completions '{"prompt":"x","max_tokens":100000}'
bad "max_tokens fractional" 400 POST /v1/completions '{"prompt":"x","max_tokens":2.5}'
bad "temperature out of range" 400 POST /v1/completions '{"prompt":"x","temperature":7}'
bad "temperature a string" 400 POST /v1/completions '{"prompt":"x","temperature":"hot"}'
bad "top_p out of range" 400 POST /v1/completions '{"prompt":"x","top_p":1.5}'
bad "seed a string" 400 POST /v1/completions '{"prompt":"x","seed":"7"}'
bad "stream not a boolean" 400 POST /v1/completions '{"prompt":"x","stream":"yes"}'
bad "stop of wrong type" 400 POST /v1/completions '{"prompt":"x","stop":7}'
bad "five stop strings" 400 POST /v1/completions '{"prompt":"x","stop":["a","b","c","d","e"]}'
bad "n = 17" 400 POST /v1/completions '{"prompt":"x","n":17}'
bad "token id outside the vocabulary" 400 POST /v1/completions '{"prompt":[1,99999]}'
bad "negative token id" 400 POST /v1/completions '{"prompt":[1,-4]}'
bad "messages missing" 400 POST /v1/chat/completions '{"max_tokens":3}'
bad "messages not an array" 400 POST /v1/chat/completions '{"messages":"hi"}'
bad "messages empty" 400 POST /v1/chat/completions '{"messages":[]}'
bad "message without role" 400 POST /v1/chat/completions '{"messages":[{"content":"hi"}]}'
bad "unknown role" 400 POST /v1/chat/completions '{"messages":[{"role":"wizard","content":"hi"}]}'
bad "content of wrong type" 400 POST /v1/chat/completions '{"messages":[{"role":"user","content":5}]}'
bad "image content part" 400 POST /v1/chat/completions '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}'
LONG=$(node -e 'console.log(JSON.stringify({prompt: "word ".repeat(2100)}))')
bad "prompt longer than the context" 400 POST /v1/completions "$LONG"
bad "tokenize without content" 400 POST /tokenize '{"text":"x"}'
bad "detokenize bad id" 400 POST /detokenize '{"tokens":[1,50000]}'
bad "detokenize not ids" 400 POST /detokenize '{"tokens":["a"]}'
BIG=$(node -e 'console.log(JSON.stringify({prompt: "x".repeat(70000)}))')
bad "body over --max-body" 413 POST /v1/completions "$BIG"
bad "chunked body over --max-body" 413 POST /v1/completions "$BIG" -H 'Transfer-Encoding: chunked'
bad "unknown endpoint" 404 GET /v1/nothing
bad "wrong method" 405 GET /v1/completions
SAVED=("${AUTH[@]}")
AUTH=()
bad "missing API key" 401 POST /v1/completions '{"prompt":"x"}'
AUTH=(-H "Authorization: Bearer wrong-key")
bad "wrong API key" 401 GET /v1/models
AUTH=()
expect_eq "/health needs no key" "$(http GET /health)" 200
AUTH=("${SAVED[@]}")
# fields the server does not know are ignored (vendor extensions); known
# ones it does not implement pass at their defaults (test_serve_fields.sh)
expect_eq "unknown fields ignored" "$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"max_tokens":2,"logit_bias":{},"user":"u","x_vendor":{"deep":[1,2]},"stream_options":null,"response_format":{"type":"text"}}')" 200
bad "logit_bias outside the vocabulary" 400 POST /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"}],"logit_bias":{"500000":1}}'
expect_eq "still serving" "$(http GET /health)" 200

# ---- parallel: two requests at once on two slots, a third waits, a fourth gets 503
# (the two are long, 2000 tokens, so the slots stay busy while this is checked,
# and are then cut; the queued one is short and must complete)
LONGGEN='{"prompt":"Once upon a time","max_tokens":2000,"temperature":0,"stream":true}'
SHORTGEN='{"prompt":"Once upon a time","max_tokens":16,"temperature":0,"stream":true}'
curl -sN "${AUTH[@]}" "$URL/v1/completions" -d "$LONGGEN" >"$WORK/par1" &
P1=$!
curl -sN "${AUTH[@]}" "$URL/v1/completions" -d "$LONGGEN" >"$WORK/par2" &
P2=$!
wait_for '[ "$(health_field slots_processing)" = 2 ]'
check "two requests run at once" $?
curl -sN "${AUTH[@]}" "$URL/v1/completions" -d "$SHORTGEN" >"$WORK/par3" &
P3=$!
wait_for '[ "$(health_field requests_waiting)" = 1 ]'
check "a third request waits in the queue" $?
expect_eq "queue full -> 503" "$(http POST /v1/completions '{"prompt":"x","max_tokens":2}')" 503
expect_eq "503 error type" "$(jget j.error.type)" unavailable_error
wait_for '[ -s "$WORK/par1" ] && [ -s "$WORK/par2" ]'
kill "$P1" "$P2"
wait "$P1" "$P2" 2>/dev/null
wait "$P3"
expect_eq "the queued stream completes" "$(grep '^data: ' "$WORK/par3" | tail -1)" "data: [DONE]"
# greedy: the same prompt gives the same text on every slot, in parallel or
# not; the cut streams hold a prefix of it (or more)
prefix_agree() {
    node -e 'const [a, b] = process.argv.slice(1); process.exit(a.startsWith(b) || b.startsWith(a) ? 0 : 1)' "$1" "$2"
}
T1=$(sse_text "$WORK/par1") T2=$(sse_text "$WORK/par2") T3=$(sse_text "$WORK/par3")
[ -n "$T1" ] && [ -n "$T2" ] && [ -n "$T3" ]
check "parallel streams carry text" $?
prefix_agree "$T1" "$T2"
check "parallel streams agree (greedy)" $?
prefix_agree "$T1" "$T3"
check "queued stream agrees (greedy)" $?

# ---- a client that disconnects mid-stream frees its slot at once
curl -sN "${AUTH[@]}" "$URL/v1/completions" -d "$LONGGEN" >"$WORK/cut" &
CURL=$!
wait_for '[ -s "$WORK/cut" ]'
kill "$CURL"
wait "$CURL" 2>/dev/null
wait_for '[ "$(health_field slots_idle)" = 2 ]' 20
check "disconnected stream's slot is free within 2 s" $?
wait_for 'grep -q "POST /v1/completions 200 .*(connection closed early)" "$WORK/server.log"' 20
check "access log says the connection closed early" $?
# a non-streaming request whose client leaves also stops
curl -s -m 0.3 "${AUTH[@]}" "$URL/v1/completions" -d '{"prompt":"Once","max_tokens":2000}' >/dev/null
wait_for '[ "$(health_field slots_idle)" = 2 ]' 30
check "disconnected non-streaming request frees its slot" $?

# ---- access log: one line per request with method, path, status, tokens, time
grep -qE '^tport serve: 127\.0\.0\.1 POST /v1/completions 200 prompt=5 completion=12 [0-9.]+ ms$' "$WORK/server.log"
check "access-log line" $?

# ---- graceful stop: a stream in flight ends with [DONE], exit status 0
curl -sN "${AUTH[@]}" "$URL/v1/completions" -d "$LONGGEN" >"$WORK/last" &
CURL=$!
wait_for '[ -s "$WORK/last" ]'
stop_server
wait "$CURL"
expect_eq "SIGTERM: exit status" "$SERVER_RC" 0
expect_eq "SIGTERM: the stream in flight ends with [DONE]" "$(grep '^data: ' "$WORK/last" | tail -1)" "data: [DONE]"
grep -q "stopped (SIGTERM)" "$WORK/server.log"
check "SIGTERM: logged" $?

# ---- another server: an explicit template (llama2), as llama.cpp lays it out
start_server --chat-template llama2 --ctx 128 --no-warmup
AUTH=()
! grep -q "warmed up" "$WORK/server.log"
check "--no-warmup: no warm-up" $?
grep -q "chat template llama2 (--chat-template)" "$WORK/server.log"
check "--chat-template is reported" $?
http POST /v1/chat/completions '{"messages":[{"role":"system","content":"S"},{"role":"user","content":"Hi"},{"role":"assistant","content":"Yo"},{"role":"user","content":"Go"}],"max_tokens":2}' >/dev/null
GOT=$(jget j.usage.prompt_tokens)
# llama2 (no <<SYS>>): "[INST] " S "\n" Hi " [/INST]" Yo "</s>" "[INST] " Go " [/INST]";
# </s> is the EOS token, so count the parts around it
http POST /tokenize "$(node -e 'console.log(JSON.stringify({add_special:true, content:"[INST] S\nHi [/INST]Yo"}))')" >/dev/null
N1=$(jget j.tokens.length)
http POST /tokenize "$(node -e 'console.log(JSON.stringify({add_special:false, content:"[INST] Go [/INST]"}))')" >/dev/null
N2=$(jget j.tokens.length)
expect_eq "llama2 chat prompt tokens (BOS, text, </s>, text)" "$GOT" "$((N1 + 1 + N2))"
stop_server

# ---- a model with its own chat template: rendered by the Jinja engine
# (test_serve_chat_jinja writes the tiny model with a custom template)
if [ -n "${TPORT_CHAT_JINJA_TEST:-}" ] && "$TPORT_CHAT_JINJA_TEST" --write-gguf "$WORK/custom-template.gguf"; then
    SAVED_MODEL=$MODEL
    MODEL="$WORK/custom-template.gguf"
    start_server --ctx 128
    grep -q "chat template: the model's tokenizer.chat_template (Jinja)" "$WORK/server.log"
    check "the model's own template is used" $?
    http GET /v1/models >/dev/null
    expect_eq "/v1/models says jinja" "$(jget 'j.data[0].meta.chat_template')" jinja
    expect_eq "chat through the template" "$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2}')" 200
    GOT=$(jget j.usage.prompt_tokens)
    # the template writes "<s>[USER] Hi\n[ASSISTANT]": BOS once, then the text
    http POST /tokenize "$(node -e 'console.log(JSON.stringify({add_special:false, content:"[USER] Hi\n[ASSISTANT]"}))')" >/dev/null
    expect_eq "template prompt tokens (BOS, text)" "$GOT" "$(( $(jget j.tokens.length) + 1 ))"
    expect_eq "a conversation the template refuses is a 400" \
        "$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"},{"role":"system","content":"late"}]}')" 400
    expect_eq "with the template's message" "$(jget 'j.error.message.includes("system must come first")')" true
    stop_server
    MODEL=$SAVED_MODEL
else
    echo "FAIL: no GGUF with a custom template (TPORT_CHAT_JINJA_TEST)"
    FAILS=$((FAILS + 1))
fi

# ---- a non-loopback --host without --api-key warns
start_server --host 0.0.0.0 2>/dev/null || true
if grep -q "warning: listening on 0.0.0.0 (not loopback) without --api-key" "$WORK/server.log"; then R=0; else R=1; fi
check "non-loopback host without key warns" $R
stop_server
finish
