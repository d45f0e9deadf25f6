#!/usr/bin/env bash
# tport serve: tools through the model's own chat template, for the three
# tool-call formats the server parses — Hermes/Qwen (<tool_call>), Llama
# 3.x (JSON) and Mistral ([TOOL_CALLS]) — with the real templates of
# ../shared/models/templates put into the tiny model.  The random model
# never calls a tool by itself, so the calls are forced (tool_choice
# "required" or a named function: a grammar from the tools' schemas) and
# must come back as message.tool_calls whose arguments validate, streamed
# or not; the tools and a tool-call round trip reach the template.
. "$(dirname "$0")/serve_lib.sh"
[ -n "${TPORT_CHAT_JINJA_TEST:-}" ] || { echo "FAIL: TPORT_CHAT_JINJA_TEST is not set"; exit 1; }
TEMPLATES="${TPORT_SHARED_DIR:-../shared}/models/templates"
[ -d "$TEMPLATES" ] || skip "$TEMPLATES is absent"

TOOLS='"tools":[{"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":20},"unit":{"enum":["c","f"]}},"required":["city","unit"]}}},{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"zone":{"type":"integer"}},"required":["zone"]}}}]'
ASK='{"role":"user","content":"What is the weather in Paris?"}'
VALID='const ok = c => { const f = c.function, a = JSON.parse(f.arguments);
    return c.type === "function" && typeof c.id === "string" && c.id.length > 0 &&
        (f.name === "get_weather" ? Object.keys(a).join() === "city,unit" && typeof a.city === "string" &&
                                    a.city.length <= 20 && ["c","f"].includes(a.unit)
         : f.name === "get_time" && Object.keys(a).join() === "zone" && Number.isInteger(a.zone)); };'

# the default model has no template: tools and tool messages are refused
start_server --ctx 512
expect_eq "no template: tools -> 400" "$(http POST /v1/chat/completions "{\"messages\":[$ASK],$TOOLS}") $(jget j.error.param)" "400 tools"
expect_eq "no template: tool results -> 400" "$(http POST /v1/chat/completions '{"messages":[{"role":"tool","tool_call_id":"a","content":"1"}]}') $(jget j.error.param)" "400 messages"
expect_eq "tool_choice naming no tool -> 400" "$(http POST /v1/chat/completions "{\"messages\":[$ASK],$TOOLS,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"nope\"}}}") $(jget j.error.param)" "400 tool_choice"
stop_server

for case in "Qwen-Qwen2.5-7B-Instruct:hermes" "meta-llama-Llama-3.1-8B-Instruct:llama3" "mistralai-Mistral-Nemo-Instruct-2407:mistral"; do
    IFS=: read -r tmpl fmt <<<"$case"
    [ -f "$TEMPLATES/$tmpl.jinja" ] || { echo "FAIL: $TEMPLATES/$tmpl.jinja is absent"; FAILS=$((FAILS + 1)); continue; }
    "$TPORT_CHAT_JINJA_TEST" --write-gguf "$WORK/$tmpl.gguf" "$TEMPLATES/$tmpl.jinja" || { echo "FAIL: writing $tmpl"; exit 1; }
    MODEL="$WORK/$tmpl.gguf"
    start_server --ctx 2048
    grep -q "tool calls: $fmt" "$WORK/server.log"
    check "$fmt: the template's format is found" $?

    # forced calls, greedy and sampled (n = 2): valid tool_calls, finish_reason tool_calls
    for sampling in '"temperature":0' '"temperature":1,"seed":3,"n":2'; do
        expect_eq "$fmt required, $sampling" "$(http POST /v1/chat/completions "{\"messages\":[$ASK],$TOOLS,\"tool_choice\":\"required\",\"max_tokens\":200,$sampling}") $(jget "$VALID"' j.choices.map(c => c.finish_reason + ":" + (c.message.content === null) + ":" + (c.message.tool_calls.length >= 1) + ":" + c.message.tool_calls.every(ok)).join()')" \
            "200 $(if [[ $sampling == *n* ]]; then echo "tool_calls:true:true:true,tool_calls:true:true:true"; else echo "tool_calls:true:true:true"; fi)"
    done
    expect_eq "$fmt named function" "$(http POST /v1/chat/completions "{\"messages\":[$ASK],$TOOLS,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}},\"max_tokens\":200,\"temperature\":1,\"seed\":4}") $(jget "$VALID"' j.choices[0].message.tool_calls.map(c => c.function.name + ":" + ok(c)).join()')" "200 get_time:true"
    # streamed: the call arrives as a delta with its index; the finish says tool_calls
    curl -sN "$URL/v1/chat/completions" -d "{\"messages\":[$ASK],$TOOLS,\"tool_choice\":\"required\",\"max_tokens\":200,\"temperature\":0,\"stream\":true}" >"$WORK/sse"
    expect_eq "$fmt streamed call" "$(node -e "$VALID"'
        const ev = require("fs").readFileSync(process.argv[1], "utf8").split("\n")
            .filter(l => l.startsWith("data: {")).map(l => JSON.parse(l.slice(6)));
        const calls = ev.flatMap(e => (e.choices[0] && e.choices[0].delta.tool_calls) || []);
        console.log(calls.length + ":" + calls.every(c => c.index === 0 && ok(c)) + ":" + ev[ev.length - 1].choices[0].finish_reason)' "$WORK/sse")" "1:true:tool_calls"

    # the tools reach the template: the prompt grows with them; "none" leaves them out
    http POST /v1/chat/completions "{\"messages\":[$ASK],\"max_tokens\":1}" >/dev/null
    PLAIN=$(jget j.usage.prompt_tokens)
    http POST /v1/chat/completions "{\"messages\":[$ASK],$TOOLS,\"max_tokens\":1}" >/dev/null
    WITH=$(jget j.usage.prompt_tokens)
    [ "$WITH" -gt $((PLAIN + 20)) ]
    check "$fmt: the tools are rendered ($PLAIN -> $WITH prompt tokens)" $?
    http POST /v1/chat/completions "{\"messages\":[$ASK],$TOOLS,\"tool_choice\":\"none\",\"max_tokens\":1}" >/dev/null
    expect_eq "$fmt: tool_choice none leaves them out" "$(jget j.usage.prompt_tokens)" "$PLAIN"
    # a round trip: the assistant's call and the tool's result go through the template
    CALL='{"role":"assistant","content":null,"tool_calls":[{"id":"abcDEF123","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"c\"}"}}]}'
    RESULT='{"role":"tool","tool_call_id":"abcDEF123","name":"get_weather","content":"{\"temperature\": 21}"}'
    expect_eq "$fmt: call and result -> 200" "$(http POST /v1/chat/completions "{\"messages\":[$ASK,$CALL,$RESULT],$TOOLS,\"max_tokens\":1}")" 200
    R=$(jget j.usage.prompt_tokens)
    [ "$R" -gt "$WITH" ]
    check "$fmt: the call and result are rendered ($WITH -> $R)" $?
    # schemas the converter refuses are named
    expect_eq "$fmt: unsupported parameter keyword -> 400" "$(http POST /v1/chat/completions "{\"messages\":[$ASK],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"pattern\":\"x\"}}}}}],\"tool_choice\":\"required\"}") $(jget j.error.param) $(jget 'j.error.message.includes("pattern")')" "400 tools true"
    stop_server
done
finish
