#!/usr/bin/env bash
# tport serve with DeepSeek's chat templates (../shared/models/templates,
# put into the tiny model): the DeepSeek tool-call format is found, and a
# reply with calls in it — R1's "function<｜tool▁sep｜>NAME ```json```"
# form and V3.1's "NAME<｜tool▁sep｜>ARGS" — comes back as tool_calls,
# whole and streamed.  The random model calls nothing by itself, so each
# reply is forced with a grammar (its text spelled by the tiny vocabulary).
. "$(dirname "$0")/serve_lib.sh"
[ -n "${TPORT_CHAT_JINJA_TEST:-}" ] || { echo "FAIL: TPORT_CHAT_JINJA_TEST is not set"; exit 1; }
TEMPLATES="${TPORT_SHARED_DIR:-../shared}/models/templates"
[ -d "$TEMPLATES" ] || skip "$TEMPLATES is absent"

TOOLS='[{"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]'
body() { # body GRAMMAR-TEXT [EXTRA-JSON]: a chat request forced to write the text
    node -e 'const [text, extra] = process.argv.slice(1);
        const b = {messages: [{role: "user", content: "Weather in Paris?"}], max_tokens: 400, temperature: 0,
                   tools: JSON.parse(process.env.TOOLS), grammar: "root ::= " + JSON.stringify(text)};
        Object.assign(b, JSON.parse(extra || "{}"));
        console.log(JSON.stringify(b));' "$1" "${2:-}"
}
export TOOLS
B='<｜tool▁calls▁begin｜>' E='<｜tool▁calls▁end｜>' CB='<｜tool▁call▁begin｜>' CE='<｜tool▁call▁end｜>' SEP='<｜tool▁sep｜>'
for case in "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B:${CB}function${SEP}get_weather
\`\`\`json
{\"city\":\"Paris\"}
\`\`\`${CE}" "deepseek-ai-DeepSeek-V3.1:${CB}get_weather${SEP}{\"city\":\"Paris\"}${CE}"; do
    tmpl=${case%%:*} call=${case#*:}
    [ -f "$TEMPLATES/$tmpl.jinja" ] || { echo "FAIL: $TEMPLATES/$tmpl.jinja is absent"; FAILS=$((FAILS + 1)); continue; }
    "$TPORT_CHAT_JINJA_TEST" --write-gguf "$WORK/$tmpl.gguf" "$TEMPLATES/$tmpl.jinja" || { echo "FAIL: writing $tmpl"; exit 1; }
    MODEL="$WORK/$tmpl.gguf"
    start_server --ctx 2048
    grep -q "tool calls: deepseek" "$WORK/server.log"
    check "$tmpl: the DeepSeek format is found" $?
    expect_eq "$tmpl: a call -> tool_calls" \
        "$(http POST /v1/chat/completions "$(body "Checking.$B$call$E")") $(jget 'const m = j.choices[0].message, c = m.tool_calls[0];
            [m.content, j.choices[0].finish_reason, m.tool_calls.length, c.function.name, JSON.parse(c.function.arguments).city].join("|")')" \
        "200 Checking.|tool_calls|1|get_weather|Paris"
    curl -sN "$URL/v1/chat/completions" -d "$(body "$B$call$E" '{"stream":true}')" >"$WORK/sse"
    expect_eq "$tmpl: streamed call" "$(node -e 'const ev = require("fs").readFileSync(process.argv[1], "utf8").split("\n")
            .filter(l => l.startsWith("data: {")).map(l => JSON.parse(l.slice(6))).filter(e => e.choices.length);
        const calls = ev.flatMap(e => e.choices[0].delta.tool_calls || []);
        console.log(calls.map(c => c.index + ":" + c.function.name).join() + "|" + ev[ev.length - 1].choices[0].finish_reason)' "$WORK/sse")" \
        "0:get_weather|tool_calls"
    expect_eq "$tmpl: a forced call is refused, naming tool_choice" \
        "$(http POST /v1/chat/completions "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":$TOOLS,\"tool_choice\":\"required\"}") $(jget j.error.param)" \
        "400 tool_choice"
    stop_server
done
finish
