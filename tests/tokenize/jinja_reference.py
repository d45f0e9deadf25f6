#!/usr/bin/env python3
"""Reference renderings of the chat templates by Python's jinja2, set up as
Hugging Face transformers sets it up (utils/chat_template_utils.py,
_compile_jinja_template): an ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks and the loopcontrols extension, a tojson filter
that is json.dumps with ensure_ascii=False by default, raise_exception and
strftime_now globals, and {% generation %} blocks (AssistantTracker) that
render their body.

With --random N, N seeded random conversations are added; with
--whitespace N, N seeded random templates that mix text and whitespace
with tags and every -/+ marker; with --statements N, N seeded random
templates of nested statements (scoping, loops, macros, blocks).

Writes, into OUT, one case per template and conversation: CASE.json (the
render context) and CASE.out (the expected bytes) or CASE.err (Python
raised), and OUT/cases.txt listing "template<TAB>case" per line.
Exit status 77 when jinja2 is missing (the ctest skip code)."""
import glob
import json
import os
import random
import sys
import time

try:
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("skipped: python3-jinja2 is not installed")
    sys.exit(77)

# strftime_now's fixed time (TZ=UTC is set by the caller): 2026-01-15 12:00
NOW = 1768478400


class Generation(Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def compile_template(src):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return time.strftime(fmt, time.localtime(NOW))

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(src)


TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city, e.g. Paris"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]}}},
]

CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}

CONVERSATIONS = {
    "user": ([{"role": "user", "content": "Hello!"}], None, True),
    "system": ([{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "What is 2+2?"}], None, True),
    "multiturn": ([{"role": "system", "content": "Be brief."},
                   {"role": "user", "content": "Hi there"},
                   {"role": "assistant", "content": "Hello! How can I help?"},
                   {"role": "user", "content": "Tell me a joke about \"quotes\" & caf\u00e9s."}], None, True),
    "finished": ([{"role": "user", "content": "Say yes."},
                  {"role": "assistant", "content": "Yes."}], None, False),
    "tools": ([{"role": "system", "content": "You can call tools."},
               {"role": "user", "content": "What's the weather in Paris?"}], TOOLS, True),
    "tool_calls": ([{"role": "user", "content": "What's the weather in Paris?"},
                    {"role": "assistant", "content": "", "tool_calls": [CALL]},
                    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
                     "content": "{\"temperature\": 21, \"sky\": \"sunny\"}"},
                    {"role": "assistant", "content": "It is 21 degrees and sunny in Paris."},
                    {"role": "user", "content": "Thanks!"}], TOOLS, True),
    "tool_result": ([{"role": "system", "content": "You can call tools."},
                     {"role": "user", "content": "Add 2 and 3, and check Paris."},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "call_2", "type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3.5}}},
                         CALL]},
                     {"role": "tool", "tool_call_id": "call_2", "name": "add", "content": "5.5"},
                     {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "sunny"}], TOOLS, True),
    # OpenAI's wire format: arguments as a JSON string
    "string_args": ([{"role": "user", "content": "Weather in Rome?"},
                     {"role": "assistant", "content": "Let me check.", "tool_calls": [
                         {"id": "call_3", "type": "function",
                          "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}}]},
                     {"role": "tool", "tool_call_id": "call_3", "content": "rainy"}], TOOLS, True),
    # content as a list of parts, and an assistant turn with its reasoning
    "parts": ([{"role": "system", "content": [{"type": "text", "text": "Answer in French."}]},
               {"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "there"}]},
               {"role": "assistant", "content": "Bonjour", "reasoning_content": "The user greets me."},
               {"role": "user", "content": "Merci"}], None, True),
    "no_thinking": ([{"role": "user", "content": "Quick: 1+1?"}], None, True, {"enable_thinking": False}),
}


# Random conversations (seeded, so the references are the same each run):
# roles in any order, content as text, None or parts, texts with quotes,
# newlines, non-ASCII, tag-like and Jinja-like text, one or two tool calls
# with dict or string arguments, reasoning, enable_thinking.
TEXTS = ["Hello", "  spaced  ", "multi\nline\ntext", "quote ' and \" both", "caf\u00e9 \u2603 \U0001F600", "",
         "<|im_end|> tag", "{{ not jinja }}", "tab\tand\\backslash", "42", "a" * 50]


def random_conversation(rng):
    def content():
        r = rng.random()
        if r < 0.75:
            return rng.choice(TEXTS)
        if r < 0.85:
            return None
        return [{"type": "text", "text": rng.choice(TEXTS)} for _ in range(rng.randint(1, 2))]

    def call(i):
        args = rng.choice([{"city": rng.choice(TEXTS)}, {}, {"a": 1, "b": [1, 2.5, None, True], "c": {"d": "e"}},
                           "{\"city\": \"Oslo\"}"])
        return {"id": "call%d" % i, "type": "function",
                "function": {"name": rng.choice(["get_weather", "add"]), "arguments": args}}

    msgs = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": rng.choice(TEXTS)})
    for _ in range(rng.randint(1, 4)):
        msgs.append({"role": "user", "content": content()})
        r = rng.random()
        if r < 0.3:
            n = rng.randint(1, 2)
            m = {"role": "assistant", "content": rng.choice(["", None, "Checking."]),
                 "tool_calls": [call(i) for i in range(n)]}
            if rng.random() < 0.3:
                m["reasoning_content"] = "thinking..."
            msgs.append(m)
            for i in range(n):
                msgs.append({"role": "tool", "tool_call_id": "call%d" % i, "name": "get_weather",
                             "content": rng.choice(TEXTS)})
            if rng.random() < 0.5:
                msgs.append({"role": "assistant", "content": rng.choice(TEXTS)})
        elif r < 0.8:
            msgs.append({"role": "assistant", "content": content()})
    tools = TOOLS if rng.random() < 0.5 else None
    agp = rng.random() < 0.7
    extra = {"enable_thinking": rng.random() < 0.5} if rng.random() < 0.3 else {}
    return (msgs, tools, agp, extra)


# Random templates for the lexer's whitespace rules: text with spaces,
# tabs, newlines and CRLF around {{ }}, {% %} (if/else, for, set, raw) and
# {# #} tags with every mix of -, + and plain markers.
WS = ["", " ", "  ", "\n", " \n", "\n  ", "\t", "\n\n", " \t \n ", "x", " y ", "\r\n", "z\n  "]


def random_whitespace_template(rng):
    def sign():
        return rng.choice(["", "", "-", "+"])

    def tag(body):
        return "{%" + sign() + " " + body + " " + sign() + "%}"

    def block(d=0):
        out = []
        for _ in range(rng.randint(1, 4)):
            r = rng.random()
            out.append(rng.choice(WS))
            if r < 0.25 or d > 2:
                out.append("{{" + rng.choice(["", "-"]) + " " + rng.choice(["x", "loop.index if loop is defined else 0"])
                           + " " + rng.choice(["", "-"]) + "}}")
            elif r < 0.45:
                out.append(tag("if " + rng.choice(["true", "false", "x"])) + block(d + 1)
                           + (tag("else") + block(d + 1) if rng.random() < 0.4 else "") + tag("endif"))
            elif r < 0.65:
                out.append(tag("for i in [1, 2]") + block(d + 1) + tag("endfor"))
            elif r < 0.75:
                out.append(tag("set y = 1"))
            elif r < 0.85:
                out.append("{#" + rng.choice(["", "-"]) + " c " + rng.choice(["", "-"]) + "#}")
            elif r < 0.9:
                out.append(tag("raw") + rng.choice(WS) + "{{ raw }}" + rng.choice(WS) + tag("endraw"))
            out.append(rng.choice(WS))
        return "".join(out)

    return block() + rng.choice(["", "\n", "\n\n", " "])


# Random templates for statements and scoping: sets inside loops, if,
# macros, call and filter/set blocks, namespaces, loop variables,
# break/continue (inside and outside loops, blocks and macros), for-else,
# macro arguments and varargs/kwargs/caller.
def random_statement_template(rng):
    names = ["a", "b", "ns.v", "i", "loop.index", "loop.first", "loop.last", "loop.previtem", "loop.length", "x", "m",
             "caller()", "varargs", "kwargs"]

    def e():
        v = rng.choice(names)
        return rng.choice([v, v + " is defined", v + " ~ 'z'", "(%s or 0)" % v, "1", "'q'"])

    def stmts(d=0):
        out = []
        for _ in range(rng.randint(1, 4)):
            r = rng.random()
            if r < 0.2 or d > 2:
                out.append("{{ %s }}" % e())
            elif r < 0.3:
                out.append("{%% set %s = %s %%}" % (rng.choice(["a", "b"]), e()))
            elif r < 0.38:
                out.append("{%% set ns.v = %s %%}" % e())
            elif r < 0.5:
                out.append("{%% if %s %%}%s{%% else %%}%s{%% endif %%}" % (e(), stmts(d + 1), stmts(d + 1)))
            elif r < 0.65:
                out.append("{%% for i in %s %s%%}%s{%% else %%}E{%% endfor %%}" % (
                    rng.choice(["[1, 2, 3]", "[]", "range(2)", "'ab'", "xs"]), rng.choice(["", "if i != 2 "]),
                    stmts(d + 1)))
            elif r < 0.7:
                out.append(rng.choice(["{% break %}", "{% continue %}"]))
            elif r < 0.8:
                out.append("{%% macro f%d(p, q=%s) %%}%s{%% endmacro %%}{{ f%d(%s) }}" % (
                    d, e(), stmts(d + 1), d, rng.choice(["1", "1, 2", "q=3, p=4", "1, 2, 3", "1, r=2"])))
            elif r < 0.88:
                out.append("{%% macro g%d() %%}[{{ caller() }}]{%% endmacro %%}{%% call g%d() %%}%s{%% endcall %%}" % (
                    d, d, stmts(d + 1)))
            elif r < 0.94:
                out.append("{%% set a %%}%s{%% endset %%}{{ a }}" % stmts(d + 1))
            else:
                out.append("{%% filter upper %%}%s{%% endfilter %%}" % stmts(d + 1))
            out.append(rng.choice(["", ",", "|"]))
        return "".join(out)

    return "{% set ns = namespace(v=0) %}" + stmts() + "{{ a }}{{ b }}{{ ns.v }}"


def write_generated(out, lines, kind, n, seed, make, ctx):
    rng = random.Random(seed)
    for k in range(n):
        case = "%s%d" % (kind, k)
        path = os.path.join(out, case + ".jinja")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(make(rng))
        with open(os.path.join(out, case + ".json"), "w", encoding="utf-8") as f:
            json.dump(ctx, f)
        try:
            with open(path, encoding="utf-8", newline="") as f:
                text = compile_template(f.read()).render(**ctx)
            with open(os.path.join(out, case + ".out"), "wb") as f:
                f.write(text.encode("utf-8"))
            ext = "out"
        except Exception as e:
            with open(os.path.join(out, case + ".err"), "w", encoding="utf-8") as f:
                f.write("%s: %s\n" % (type(e).__name__, e))
            ext = "err"
        lines.append("%s\t%s\t%s\n" % (path, case, ext))


def main():
    args = sys.argv[1:]
    counts = {"--random": 0, "--whitespace": 0, "--statements": 0}
    while len(args) > 2 and args[0] in counts:
        counts[args[0]] = int(args[1])
        args = args[2:]
    if len(args) != 2:
        print("usage: jinja_reference.py [--random N] [--whitespace N] [--statements N] TEMPLATE_DIR OUT_DIR",
              file=sys.stderr)
        return 2
    n_random = counts["--random"]
    tdir, out = args
    conversations = dict(CONVERSATIONS)
    rng = random.Random(42)
    for k in range(n_random):
        conversations["random%d" % k] = random_conversation(rng)
    os.makedirs(out, exist_ok=True)
    templates = sorted(glob.glob(os.path.join(tdir, "*.jinja")))
    if not templates:
        print("skipped: no templates in " + tdir)
        return 77
    lines = []
    for path in templates:
        name = os.path.basename(path)[:-len(".jinja")]
        with open(path, encoding="utf-8") as f:
            src = f.read()
        try:
            tmpl = compile_template(src)
            compile_error = None
        except Exception as e:  # a syntax error: every case must fail
            tmpl, compile_error = None, e
        for conv, spec in conversations.items():
            messages, tools, agp = spec[:3]
            extra = spec[3] if len(spec) > 3 else {}
            case = name + "." + conv
            ctx = {"messages": messages, "tools": tools, "documents": None,
                   "add_generation_prompt": agp, "bos_token": "<|bos|>", "eos_token": "<|eos|>",
                   "unk_token": "<|unk|>", "pad_token": "<|pad|>", **extra}
            with open(os.path.join(out, case + ".json"), "w", encoding="utf-8") as f:
                json.dump(ctx, f, ensure_ascii=False)
            try:
                if compile_error:
                    raise compile_error
                text = tmpl.render(**ctx)
                with open(os.path.join(out, case + ".out"), "wb") as f:
                    f.write(text.encode("utf-8", "surrogatepass"))
                ext = "out"
            except Exception as e:
                with open(os.path.join(out, case + ".err"), "w", encoding="utf-8") as f:
                    f.write("%s: %s\n" % (type(e).__name__, e))
                ext = "err"
            lines.append("%s\t%s\t%s\n" % (path, case, ext))
    write_generated(out, lines, "whitespace", counts["--whitespace"], 7, random_whitespace_template, {"x": "X"})
    write_generated(out, lines, "statements", counts["--statements"], 11, random_statement_template,
                    {"x": "X", "xs": [1, 2], "m": {"k": "v"}})
    with open(os.path.join(out, "cases.txt"), "w", encoding="utf-8") as f:
        f.writelines(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
