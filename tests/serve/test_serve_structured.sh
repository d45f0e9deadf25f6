#!/usr/bin/env bash
# tport serve: what applications ask beyond plain text — log-probabilities
# (chat and completions shapes, checked against each other and against the
# text), several choices (n), seeds, logit_bias, structured output
# (response_format json_object / json_schema, llama-server's json_schema
# and grammar fields: every answer parses and validates, greedy and
# sampled, streamed or not) and the prompt cache (a repeated prompt reuses
# the slot's cache and gives the same greedy text as `tport run`), and
# /metrics and /slots.
. "$(dirname "$0")/serve_lib.sh"

start_server --ctx 1024
CHAT='"messages":[{"role":"user","content":"Write a short story."}]'

# ---- logprobs, chat: one entry per token, the tokens spell the content,
# greedy picks the best alternative, alternatives sorted, log p <= 0
expect_eq "chat logprobs -> 200" "$(http POST /v1/chat/completions "{$CHAT,\"max_tokens\":12,\"temperature\":0,\"logprobs\":true,\"top_logprobs\":3}")" 200
expect_eq "chat logprobs: shape" "$(jget 'const c = j.choices[0], l = c.logprobs.content;
    [l.length === j.usage.completion_tokens, l.map(t => t.token).join("") === c.message.content,
     l.every(t => t.logprob <= 0 && t.top_logprobs.length === 3 && t.top_logprobs[0].token === t.token &&
                  t.top_logprobs[0].logprob === t.logprob && t.top_logprobs[1].logprob <= t.top_logprobs[0].logprob &&
                  t.top_logprobs[2].logprob <= t.top_logprobs[1].logprob &&
                  Buffer.from(t.bytes).toString() === t.token)].join(",")')" "true,true,true"
# completions: tokens, token_logprobs, top_logprobs (k = 2), text_offset
expect_eq "completion logprobs -> 200" "$(http POST /v1/completions '{"prompt":"Once upon a time","max_tokens":10,"temperature":0,"logprobs":2}')" 200
expect_eq "completion logprobs: shape" "$(jget 'const c = j.choices[0], l = c.logprobs;
    let off = 0, ok = true;
    for (let i = 0; i < l.tokens.length; i++) { ok = ok && l.text_offset[i] === off; off += Buffer.byteLength(l.tokens[i]); }
    [l.tokens.join("") === c.text, l.tokens.length === 10, ok, l.token_logprobs.every(x => x <= 0),
     l.top_logprobs.every((t, i) => Object.keys(t).length >= 1 && Object.keys(t).length <= 2 &&
                                    Math.max(...Object.values(t)) === l.token_logprobs[i])].join(",")')" "true,true,true,true,true"
# streamed: the same entries, spread over the chunks
curl -sN "$URL/v1/chat/completions" -d "{$CHAT,\"max_tokens\":12,\"temperature\":0,\"logprobs\":true,\"stream\":true}" >"$WORK/sse"
http POST /v1/chat/completions "{$CHAT,\"max_tokens\":12,\"temperature\":0,\"logprobs\":true}" >/dev/null
WHOLE=$(jget 'j.choices[0].logprobs.content.map(t => t.token + ":" + t.logprob).join("|")')
STREAMED=$(node -e 'const ev = require("fs").readFileSync(process.argv[1], "utf8").split("\n")
                     .filter(l => l.startsWith("data: {")).map(l => JSON.parse(l.slice(6)));
                   console.log(ev.filter(e => e.choices.length && e.choices[0].logprobs)
                     .flatMap(e => e.choices[0].logprobs.content).map(t => t.token + ":" + t.logprob).join("|"))' "$WORK/sse")
expect_eq "streamed logprobs = whole" "$STREAMED" "$WHOLE"

# ---- n: several choices, each its own seed (seed + index), reproducible
expect_eq "n=3 -> 200" "$(http POST /v1/completions '{"prompt":"Hello","max_tokens":8,"temperature":1,"seed":11,"n":3}')" 200
N3=$(jget 'j.choices.map(c => c.index + ":" + c.text).join("|")')
expect_eq "n=3: three choices, usage sums them" "$(jget '[j.choices.length, j.usage.completion_tokens === 24,
    new Set(j.choices.map(c => c.text)).size > 1].join(",")')" "3,true,true"
http POST /v1/completions '{"prompt":"Hello","max_tokens":8,"temperature":1,"seed":11,"n":3}' >/dev/null
expect_eq "n=3 again: the same choices" "$(jget 'j.choices.map(c => c.index + ":" + c.text).join("|")')" "$N3"
# choice 0 of n is the single answer with the same seed; choice 1 that of seed + 1
http POST /v1/completions '{"prompt":"Hello","max_tokens":8,"temperature":1,"seed":12}' >/dev/null
expect_eq "choice 1 = seed + 1" "$(jget '"1:" + j.choices[0].text')" "$(cut -d'|' -f2 <<<"$N3")"
# streamed n: the chunks of choice 0, then of choice 1, same texts
curl -sN "$URL/v1/completions" -d '{"prompt":"Hello","max_tokens":8,"temperature":1,"seed":11,"n":3,"stream":true,"stream_options":{"include_usage":true}}' >"$WORK/sse"
expect_eq "streamed n=3 = whole" "$(node -e 'const ev = require("fs").readFileSync(process.argv[1], "utf8").split("\n")
    .filter(l => l.startsWith("data: {")).map(l => JSON.parse(l.slice(6)));
    const t = ["", "", ""]; ev.filter(e => e.choices.length).forEach(e => t[e.choices[0].index] += e.choices[0].text);
    const u = ev[ev.length - 1].usage;
    console.log(t.map((x, i) => i + ":" + x).join("|") + (u.completion_tokens === 24 ? "" : " usage " + JSON.stringify(u)))' "$WORK/sse")" "$N3"

# ---- logit_bias: +100 on one id makes greedy repeat it; -100 on the greedy first token changes it
# (the text of the id three times after others: detokenized after a first one)
http POST /detokenize '{"tokens":[15043]}' >/dev/null
ONE=$(jget j.content)
http POST /detokenize '{"tokens":[15043,15043,15043,15043]}' >/dev/null
HELLO3=$(jget "j.content.slice(${#ONE})")
http POST /v1/completions '{"prompt":"Once upon a time","max_tokens":3,"temperature":0,"logit_bias":{"15043":100}}' >/dev/null
expect_eq "logit_bias +100" "$(jget 'j.choices[0].text')" "$HELLO3"
# llama-server's pairs add up; false bans the id whatever else it gets
http POST /v1/completions '{"prompt":"Once upon a time","max_tokens":3,"temperature":0,"logit_bias":[[15043,100],[15043,false]]}' >/dev/null
T=$(jget 'j.choices[0].text')
[ -n "$T" ] && [[ "$T" != *"$ONE"* ]]
check "logit_bias false bans the id ('$T')" $?
expect_eq "logit_bias outside the vocabulary -> 400" "$(http POST /v1/completions '{"prompt":"x","logit_bias":{"99999999":1}}') $(jget j.error.param)" "400 logit_bias"

# ---- structured output: every answer parses and validates
validate() { # validate SCHEMA-JS-CHECK: j.choices[*] content must parse and pass the check (v = parsed)
    jget 'j.choices.map(c => { const s = c.message ? c.message.content : c.text;
        try { const v = JSON.parse(s); return (('"$1"') ? "ok" : "invalid: " + s); } catch (e) { return "unparsable: " + s; } }).join(",")'
}
SCHEMA1='{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer"},"tags":{"type":"array","items":{"enum":["red","green","blue"]},"minItems":1,"maxItems":3}},"required":["name","age","tags"],"additionalProperties":false}'
CHECK1='Object.keys(v).join() === "name,age,tags" && typeof v.name === "string" && v.name.length <= 12 && Number.isInteger(v.age) && v.tags.length >= 1 && v.tags.length <= 3 && v.tags.every(t => ["red","green","blue"].includes(t))'
SCHEMA2='{"type":"object","properties":{"ok":{"type":"boolean"},"score":{"type":"number"},"note":{"anyOf":[{"type":"string","maxLength":16},{"type":"null"}]},"kind":{"const":"x"}},"required":["ok","kind"]}'
CHECK2='typeof v.ok === "boolean" && v.kind === "x" && (v.score === undefined || typeof v.score === "number") && (v.note === undefined || v.note === null || typeof v.note === "string") && Object.keys(v).every(k => ["ok","score","note","kind"].includes(k))'
SCHEMA3='{"$defs":{"pt":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}},"type":"object","properties":{"from":{"$ref":"#/$defs/pt"},"to":{"$ref":"#/$defs/pt"}},"required":["from","to"]}'
CHECK3='["from","to"].every(k => typeof v[k].x === "number" && typeof v[k].y === "number" && Object.keys(v[k]).join() === "x,y")'
SCHEMA4='{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]},"maxItems":4}'
CHECK4='Array.isArray(v) && v.length <= 4 && v.every(o => Number.isInteger(o.id) && Object.keys(o).join() === "id")'
for i in 1 2 3 4; do
    eval "SCHEMA=\$SCHEMA$i; CHK=\$CHECK$i"
    SAMPLINGS=('"temperature":0,"n":1' '"temperature":1,"seed":5,"n":2')
    # (sanitizer builds run about ten times slower: sampled once, for one schema)
    [ -n "${TPORT_SANITIZE:-}" ] && [ "$i" != 1 ] && SAMPLINGS=('"temperature":0,"n":1')
    for sampling in "${SAMPLINGS[@]}"; do
        code=$(http POST /v1/chat/completions "{$CHAT,\"max_tokens\":400,$sampling,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"s$i\",\"strict\":true,\"schema\":$SCHEMA}}}")
        want=ok; [[ $sampling == *'"n":2'* ]] && want=ok,ok
        expect_eq "schema $i, $sampling: valid JSON" "$code $(validate "$CHK")" "200 $want"
        expect_eq "schema $i, $sampling: finished by the grammar" "$(jget 'j.choices.map(c => c.finish_reason).join()')" "${want//ok/stop}"
    done
done
# json_object: any object; completions take response_format too, and llama-server's json_schema field
expect_eq "json_object" "$(http POST /v1/chat/completions "{$CHAT,\"max_tokens\":300,\"temperature\":1,\"seed\":3,\"response_format\":{\"type\":\"json_object\"}}") $(validate 'typeof v === "object" && v !== null && !Array.isArray(v)')" "200 ok"
expect_eq "completions + json_schema field" "$(http POST /v1/completions "{\"prompt\":\"JSON:\",\"max_tokens\":300,\"temperature\":1,\"seed\":4,\"json_schema\":$SCHEMA4}") $(validate "$CHECK4")" "200 ok"
# streamed structured output: the joined deltas validate
curl -sN "$URL/v1/chat/completions" -d "{$CHAT,\"max_tokens\":300,\"temperature\":1,\"seed\":8,\"stream\":true,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"s\",\"schema\":$SCHEMA1}}}" >"$WORK/sse"
node -e 'const ev = require("fs").readFileSync(process.argv[1], "utf8").split("\n")
    .filter(l => l.startsWith("data: {")).map(l => JSON.parse(l.slice(6)));
    console.log(JSON.stringify({choices: [{message: {content: ev.filter(e => e.choices.length).map(e => e.choices[0].delta.content || "").join("")}}]}))' "$WORK/sse" >"$WORK/joined"
expect_eq "streamed json_schema validates" "$(jget "j.choices.map(c => { const v = JSON.parse(c.message.content); return ($CHECK1) ? 'ok' : 'invalid' }).join()" "$WORK/joined")" ok
# grammar (GBNF)
expect_eq "grammar" "$(http POST /v1/completions '{"prompt":"Answer:","max_tokens":20,"temperature":1,"seed":9,"n":4,"grammar":"root ::= (\"yes\" | \"no\") \", \" [0-9]{1,3} \".\""}') $(jget 'j.choices.every(c => /^(yes|no), [0-9]{1,3}\.$/.test(c.text) && c.finish_reason === "stop")')" "200 true"
# errors name what is wrong
expect_eq "bad grammar -> 400" "$(http POST /v1/completions '{"prompt":"x","grammar":"root ::= undefined-rule"}') $(jget j.error.param) $(jget 'j.error.message.includes("undefined-rule")')" "400 grammar true"
expect_eq "unsupported schema keyword -> 400" "$(http POST /v1/chat/completions "{$CHAT,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\",\"schema\":{\"type\":\"string\",\"pattern\":\"^a\"}}}}") $(jget j.error.param) $(jget 'j.error.message.includes("pattern")')" "400 response_format true"

# ---- the prompt cache: a repeated prompt reuses all but its last token,
# and the greedy text is that of a fresh run
http POST /v1/completions '{"prompt":"Once upon a time there was","max_tokens":4,"temperature":0}' >/dev/null
http POST /v1/completions '{"prompt":"Once upon a time","max_tokens":16,"temperature":0}' >/dev/null
expect_eq "cache: common prefix reused" "$(jget 'j.usage.prompt_tokens_details.cached_tokens')" 4
TEXT=$(jget 'j.choices[0].text')
RUN=$("$TPORT_CLI" run -m "$MODEL" -p "Once upon a time" -n 16 --temp 0 --threads 1 --ctx 1024 2>/dev/null)
expect_eq "cache: greedy text = tport run" "Once upon a time$TEXT" "$RUN"
http POST /v1/chat/completions "{$CHAT,\"max_tokens\":8,\"temperature\":0}" >/dev/null
C1=$(jget 'j.choices[0].message.content')
P1=$(jget 'j.usage.prompt_tokens')
http POST /v1/chat/completions "{$CHAT,\"max_tokens\":8,\"temperature\":0}" >/dev/null
expect_eq "cache: the same chat again" "$(jget 'j.choices[0].message.content + "|" + j.usage.prompt_tokens_details.cached_tokens')" "$C1|$((P1 - 1))"

# ---- /metrics (llama-server's names) and /slots count what was done
metric() { curl -s "$URL/metrics" | sed -n "s/^$1 //p"; }
expect_eq "GET /metrics" "$(http GET /metrics)" 200
grep -q '^# TYPE llamacpp:prompt_tokens_total counter$' "$WORK/body"
check "/metrics is Prometheus text" $?
P0=$(metric 'llamacpp:prompt_tokens_total'); G0=$(metric 'llamacpp:tokens_predicted_total')
C0=$(metric 'tport:prompt_tokens_cached_total'); R0=$(metric 'tport:requests_total')
http POST /v1/completions '{"prompt":"A brand new prompt here","max_tokens":5,"temperature":0,"n":2}' >/dev/null
PT=$(jget j.usage.prompt_tokens); CT=$(jget j.usage.prompt_tokens_details.cached_tokens)
P1=$(metric 'llamacpp:prompt_tokens_total'); G1=$(metric 'llamacpp:tokens_predicted_total')
C1=$(metric 'tport:prompt_tokens_cached_total'); R1=$(metric 'tport:requests_total')
# (choice 2 finds all but the last prompt token in the cache)
expect_eq "metrics: one request, 10 tokens, the prompt evaluated or cached" \
    "$((R1 - R0)) $((G1 - G0)) $((P1 - P0 + C1 - C0))" "1 10 $((2 * PT))"
expect_eq "metrics: the second choice's prompt came from the cache" "$((C1 - C0 - CT))" "$((PT - 1))"
expect_eq "GET /slots" "$(http GET /slots) $(jget 'j.length + ":" + j[0].is_processing + ":" + (j[0].n_cached > 0)')" "200 1:false:true"
expect_eq "still serving" "$(http GET /health)" 200
stop_server
finish
