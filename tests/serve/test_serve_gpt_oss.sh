#!/usr/bin/env bash
# tport serve with gpt-oss's chat template (../shared/models/templates,
# put into the tiny model): the harmony format is found, and a reply in it
# comes back split — analysis as reasoning_content, final as content, a
# commentary message to functions.NAME as tool_calls — whole and streamed.
# (The template needs each tool's description.)  The random model writes no harmony by itself, so each reply is forced
# with a grammar (its text spelled by the tiny vocabulary's tokens; the
# parser sees the same text the gpt-oss vocabulary's marker tokens print).
. "$(dirname "$0")/serve_lib.sh"
[ -n "${TPORT_CHAT_JINJA_TEST:-}" ] || { echo "FAIL: TPORT_CHAT_JINJA_TEST is not set"; exit 1; }
TMPL="${TPORT_SHARED_DIR:-../shared}/models/templates/openai-gpt-oss-120b.jinja"
[ -f "$TMPL" ] || skip "$TMPL is absent"
"$TPORT_CHAT_JINJA_TEST" --write-gguf "$WORK/oss.gguf" "$TMPL" || { echo "FAIL: writing the model"; exit 1; }
MODEL="$WORK/oss.gguf"

TOOLS='[{"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]'
# body GRAMMAR-TEXT [EXTRA-JSON]: a chat request forced to write the text
body() {
    node -e 'const [text, extra] = process.argv.slice(1);
        const b = {messages: [{role: "user", content: "Weather in Paris?"}], max_tokens: 300, temperature: 0,
                   grammar: "root ::= " + JSON.stringify(text)};
        Object.assign(b, JSON.parse(extra || "{}"));
        console.log(JSON.stringify(b));' "$1" "${2:-}"
}
ANSWER='<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Hi!'
CALL='<|channel|>analysis<|message|>Need tool.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}'

start_server --ctx 1024
grep -q "tool calls: harmony" "$WORK/server.log"
check "the template's harmony format is found" $?

expect_eq "analysis -> reasoning_content, final -> content" \
    "$(http POST /v1/chat/completions "$(body "$ANSWER")") $(jget '[j.choices[0].message.reasoning_content, j.choices[0].message.content, j.choices[0].finish_reason, j.choices[0].message.tool_calls === undefined].join("|")')" \
    "200 Think.|Hi!|stop|true"
expect_eq "a call to functions.get_weather -> tool_calls" \
    "$(http POST /v1/chat/completions "$(body "$CALL" "{\"tools\":$TOOLS}")") $(jget 'const m = j.choices[0].message, c = m.tool_calls[0];
        [m.reasoning_content, String(m.content), j.choices[0].finish_reason, m.tool_calls.length, c.type, c.function.name,
         JSON.parse(c.function.arguments).city, c.id.startsWith("call_")].join("|")')" \
    "200 Need tool.|null|tool_calls|1|function|get_weather|Paris|true"
expect_eq "the same call without tools in the request is not reported" \
    "$(http POST /v1/chat/completions "$(body "$CALL")") $(jget '[j.choices[0].message.reasoning_content, j.choices[0].message.tool_calls === undefined, j.choices[0].finish_reason].join("|")')" \
    "200 Need tool.|true|stop"
expect_eq "a forced call is refused, naming tool_choice" \
    "$(http POST /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":$TOOLS,\"tool_choice\":\"required\"}") $(jget j.error.param)" \
    "400 tool_choice"

# streamed: the reasoning and the content come as deltas (more than one
# event each), the call as a delta with its index, then the finish
DELTAS='const ev = require("fs").readFileSync(process.argv[1], "utf8").split("\n")
    .filter(l => l.startsWith("data: {")).map(l => JSON.parse(l.slice(6))).filter(e => e.choices.length);
const d = ev.map(e => e.choices[0].delta);
const r = d.filter(x => x.reasoning_content), c = d.filter(x => x.content);
const calls = d.flatMap(x => x.tool_calls || []);
console.log([r.map(x => x.reasoning_content).join(""), r.length > 1, c.map(x => x.content).join(""), c.length > 1,
             calls.map(x => x.index + ":" + x.function.name + ":" + x.function.arguments).join(),
             ev[ev.length - 1].choices[0].finish_reason, d.some(x => /<\|/.test(x.content || ""))].join("|"));'
curl -sN "$URL/v1/chat/completions" -d "$(body "$ANSWER" '{"stream":true}')" >"$WORK/sse1"
expect_eq "streamed reasoning and content" "$(node -e "$DELTAS" "$WORK/sse1")" "Think.|true|Hi!|true||stop|false"
curl -sN "$URL/v1/chat/completions" -d "$(body "$CALL" "{\"stream\":true,\"tools\":$TOOLS}")" >"$WORK/sse2"
expect_eq "streamed call" "$(node -e "$DELTAS" "$WORK/sse2")" \
    "Need tool.|true||false|0:get_weather:{\"city\":\"Paris\"}|tool_calls|false"
stop_server
finish
