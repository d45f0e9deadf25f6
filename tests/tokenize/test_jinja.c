/* The Jinja engine's parts, each with expected text written down (the
 * strings were checked against Python jinja2 set up as transformers sets
 * it up): whitespace control, statements, loops, scoping, macros,
 * expressions, Python's str()/repr()/float text, filters, tests, methods,
 * tojson, and errors (NULL expected: jinja2 raises too).  Then the error
 * messages' line numbers, the limits, and hostile inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tport/tport.h"

typedef struct jcase {
    const char *tmpl, *ctx, *want;
} jcase;

static const jcase CASES[] = {
    {"Hello {{ name }}!",
     "{\"name\": \"World\"}",
     "Hello World!"},
    {"{{ missing }}|{{ missing is defined }}|{{ missing | default('d') }}",
     "{}",
     "|False|d"},
    {"a\n{% if true %}\n  x\n{% endif %}\nb\n",
     "{}",
     "a\n  x\nb"},
    {"  {% if true %}yes{% endif %}  \n{{ 1 }}",
     "{}",
     "yes  \n1"},
    {"{%- if true -%}  a  {%- endif -%}  b",
     "{}",
     "ab"},
    {"x {%+ if true %}y{% endif +%}\nz",
     "{}",
     "x y\nz"},
    {"{# comment #}\n  {# indented #}\nA",
     "{}",
     "A"},
    {"{% for x in xs %}{{ loop.index }}/{{ loop.length }}{{ ',' if not loop.last }}{% endfor %}",
     "{\"xs\": [1, 2, 3]}",
     "1/3,2/3,3/3"},
    {"{% for x in xs %}{{ loop.previtem }}>{{ x }}<{{ loop.nextitem }} {{ loop.revindex0 }}|{% endfor %}",
     "{\"xs\": [\"a\", \"b\"]}",
     ">a<b 1|a>b< 0|"},
    {"{% for x in xs if x % 2 %}{{ x }}{{ loop.index0 }}{% else %}none{% endfor %}",
     "{\"xs\": [1, 2, 3, 4, 5]}",
     "103152"},
    {"{% for x in [] %}{{ x }}{% else %}empty{% endfor %}",
     "{}",
     "empty"},
    {"{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 4 %}{% break %}{% endif %}{{ x }}{% endfor %}",
     "{}",
     "0134"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
     "{\"d\": {\"b\": 1, \"a\": 2}}",
     "b=1;a=2;"},
    {"{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}",
     "{}",
     "1"},
    {"{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}",
     "{}",
     "4"},
    {"{% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, b=3) }}",
     "{}",
     "[1B][23]"},
    {"{% macro w() %}<{{ caller() }}>{% endmacro %}{% call w() %}inner{% endcall %}",
     "{}",
     "<inner>"},
    {"{% filter upper %}shout {{ 'it' }}{% endfilter %}",
     "{}",
     "SHOUT IT"},
    {"{% set block %}  body  {% endset %}[{{ block | trim }}]",
     "{}",
     "[body]"},
    {"{{ 'abcdef'[1:4] }}{{ 'abc'[::-1] }}{{ [1,2,3][-1] }}{{ [1,2,3,4][::2] }}",
     "{}",
     "bcdcba3[1, 3]"},
    {"{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }}",
     "{}",
     "3 -4 1 2 3.5 1024 7"},
    {"{{ 0.1 + 0.2 }} {{ 1.0 }} {{ 1e20 }} {{ 1.5e-7 }} {{ 3.0 * 2 }}",
     "{}",
     "0.30000000000000004 1.0 1e+20 1.5e-07 6.0"},
    {"{{ 'a' ~ 1 ~ none ~ true }}",
     "{}",
     "a1NoneTrue"},
    {"{{ d }} {{ l }} {{ t }}",
     "{\"d\": {\"a\": \"it's\", \"b\": [1, 2.5, null, true]}, \"l\": [\"x\\ny\", \"q\\\"'\"], \"t\": null}",
     "{'a': \"it's\", 'b': [1, 2.5, None, True]} ['x\\ny', 'q\"\\''] None"},
    {"{{ x | tojson }}|{{ x | tojson(indent=2) }}|{{ x | tojson(sort_keys=true) }}|{{ 'caf\303\251' | tojson(ensure_ascii=true) }}",
     "{\"x\": {\"b\": [1, {\"c\": null}], \"a\": \"\303\251\\\"\\n\"}}",
     "{\"b\": [1, {\"c\": null}], \"a\": \"\303\251\\\"\\n\"}|{\n  \"b\": [\n    1,\n    {\n      \"c\": null\n    }\n  ],\n  \"a\": \"\303\251\\\"\\n\"\n}|{\"a\": \"\303\251\\\"\\n\", \"b\": [1, {\"c\": null}]}|\"caf\\u00e9\""},
    {"{{ [] | tojson(indent=2) }}{{ {} | tojson }}",
     "{}",
     "[]{}"},
    {"{{ '  hi  ' | trim }}|{{ 'Hello World' | lower }}|{{ 'hello world' | title }}|{{ 'hello' | upper }}|{{ 'hELLO' | capitalize }}",
     "{}",
     "hi|hello world|Hello World|HELLO|Hello"},
    {"{{ xs | length }} {{ xs | first }} {{ xs | last }} {{ xs | join(', ') }} {{ xs | reverse | list }} {{ xs | sort | list }}",
     "{\"xs\": [3, 1, 2]}",
     "3 3 2 3, 1, 2 [2, 1, 3] [1, 2, 3]"},
    {"{{ ms | map(attribute='role') | join(',') }}|{{ ms | selectattr('role', 'equalto', 'user') | list | length }}|{{ ms | rejectattr('role', 'eq', 'user') | map(attribute='c') | list }}",
     "{\"ms\": [{\"role\": \"user\", \"c\": 1}, {\"role\": \"bot\", \"c\": 2}, {\"role\": \"user\", \"c\": 3}]}",
     "user,bot,user|2|[2]"},
    {"{{ ['b', 'A', 'a', 'B'] | unique | list }} {{ ['b', 'A', 'c'] | sort }} {{ {'b': 1, 'a': 2} | dictsort }}",
     "{}",
     "['b', 'A'] ['A', 'b', 'c'] [('a', 2), ('b', 1)]"},
    {"{{ 'a\nb\n\nc' | indent(2) }}|{{ 'x\ny' | indent(4, true) }}",
     "{}",
     "a\n  b\n\n  c|    x\n    y"},
    {"{{ 'aXbX' | replace('X', '-') }} {{ -3 | abs }} {{ 2.567 | round(1) }} {{ '42' | int + 1 }} {{ 'x' | int }} {{ '2.5' | float }}",
     "{}",
     "a-b- 3 2.6 43 0 2.5"},
    {"{{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ 'one two  three' | wordcount }} {{ [1, 2] | sum }}",
     "{}",
     "1 3 3 3"},
    {"{{ ' a b '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}",
     "{}",
     "a b|['a', 'b', '', 'c']|['a', 'b']|True|True"},
    {"{{ 'xxhixx'.strip('x') }}|{{ 'hi'.lstrip('h') }}|{{ 'a-b-c'.replace('-', '+', 1) }}|{{ 'hello'.find('l') }}|{{ '{} and {name}'.format(1, name='n') }}",
     "{}",
     "hi|i|a+b-c|2|1 and n"},
    {"{{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }} {{ 'a' in d }} {{ 'z' not in d }}",
     "{\"d\": {\"a\": 1, \"b\": 2}}",
     "1 dflt ['a', 'b'] [1, 2] True True"},
    {"{{ x is string }} {{ x is mapping }} {{ l is iterable }} {{ l is sequence }} {{ 3 is odd }} {{ 4 is even }} {{ n is none }} {{ 1 is number }} {{ true is boolean }} {{ 6 is divisibleby 3 }}",
     "{\"x\": \"s\", \"l\": [1], \"n\": null}",
     "True False True True True True True True True True"},
    {"{{ 1 if x else 2 }}{{ 'y' if false }}|{{ x and 'a' or 'b' }}|{{ not x }}",
     "{\"x\": 0}",
     "2|b|True"},
    {"{{ ('a', 'b') }} {{ (1,) }} {{ [1, 2] + [3] }} {{ 'ab' * 2 }}",
     "{}",
     "('a', 'b') (1,) [1, 2, 3] abab"},
    {"{{ raise_exception('bad input') }}",
     "{}",
     NULL},
    {"{{ strftime_now('%Y-%m-%d %H:%M') }}",
     "{}",
     "2026-01-15 12:00"},
    {"{{ missing.attr }}",
     "{}",
     NULL},
    {"{{ 1 + 'a' }}",
     "{}",
     NULL},
    {"{% for x in none %}{% endfor %}",
     "{}",
     NULL},
    {"{% set l = [] %}{{ l.append(1) }}",
     "{}",
     NULL},
    {"{% if %}",
     "{}",
     NULL},
    {"{{ 'unterminated }}",
     "{}",
     NULL},
    {"{% for x in xs %}",
     "{\"xs\": []}",
     NULL},
    {"{% endif %}",
     "{}",
     NULL},
    {"{{ m.content }}|{{ m['content'] }}|{{ m.nope }}|{{ l[5] }}",
     "{\"m\": {\"content\": [{\"type\": \"text\", \"text\": \"hi\"}]}, \"l\": []}",
     "[{'type': 'text', 'text': 'hi'}]|[{'type': 'text', 'text': 'hi'}]||"},
    {"{{ 'x' | safe + '<b>' }}|{{ '<a>' ~ ('y' | safe) }}",
     "{}",
     "x&lt;b&gt;|<a>y"},
    {"{{ xs | map('upper') | join }}{{ xs | select('equalto', 'a') | list }}",
     "{\"xs\": [\"a\", \"b\"]}",
     "AB['a']"},
    {"{% generation %}gen{% endgeneration %}",
     "{}",
     "gen"},
    {"{{ x | tojson(separators=(',', ':')) }}",
     "{\"x\": {\"a\": [1, 2]}}",
     "{\"a\":[1,2]}"},
    {"{{ [1, 2] | map('string') | list | tojson }}",
     "{}",
     "[\"1\", \"2\"]"},
    {"{{ xs | map(attribute='a') | tojson }}",
     "{\"xs\": [{\"a\": 1}]}",
     NULL},
    {"{{ range(3) | list }}{{ range(1, 7, 2) | list }}{{ range(3, 0, -1) | list }}",
     "{}",
     "[0, 1, 2][1, 3, 5][3, 2, 1]"},
    {"{{ 'a' < 'b' }} {{ 2 >= 2.0 }} {{ [1, 2] == [1, 2] }} {{ 1 == true }} {{ none == none }}",
     "{}",
     "True True True True True"},
    {"{{ 'ab' < 1 }}",
     "{}",
     NULL},
    {"{% set a, b = [1, 2] %}{{ b }}{{ a }}",
     "{}",
     "21"},
    {"line1\n{{ undefined_fn() }}",
     "{}",
     NULL},
    {"\r\nA\r\n{%- if true %}\r\nB{% endif %}\n\n",
     "{}",
     "\nAB"},
    {"{% for i in range(3) %}{% if i == 0 %}{% set x = 5 %}{% endif %}{{ x }}{% endfor %}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "5"},
    {"{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "2"},
    {"{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }}{% endfor %}{{ loop.index }}{% endfor %}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "11321411232242"},
    {"{% macro f(x) %}{{ x }}{{ y }}{% endmacro %}{% set y = 3 %}{{ f(1) }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "13"},
    {"{{ [1,2,3] | join }}{{ [1,2][0:1] }}{{ 'abc' | list }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "123[1]['a', 'b', 'c']"},
    {"{{ {'a': 1}.items() | list }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "[('a', 1)]"},
    {"{{ 10 / 4 }}{{ 10 / 5 }}{{ 1e300 * 1e10 }}{{ -0.0 }}{{ 1/3 }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "2.52.0inf-0.00.3333333333333333"},
    {"{{ 123456789012345678 }}{{ 1.5e16 }}{{ 12345678.9 }}{{ 0.0001 }}{{ 0.00001 }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "1234567890123456781.5e+1612345678.90.00011e-05"},
    {"{{ '%s' }}{{ 'a\\tb' }}{{ \"it's\" }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "%sa\tbit's"},
    {"{{ x.y.z is defined }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     NULL},
    {"{{ none | string }}{{ none | default('x') }}{{ none | default('x', true) }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "NoneNonex"},
    {"{{ [] | first }}{{ [] | last }}|{{ '' | first }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "|"},
    {"{{ 'Hello World' | replace('o', '0') | upper | center(20) }}|",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "    HELL0 W0RLD     |"},
    {"{{ messages | length }}{{ messages[0].role }}{{ messages[-1]['content'] }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "4systemU2"},
    {"{% for m in messages %}{{ m.role }}{% if not loop.last %},{% endif %}{% endfor %}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "system,user,assistant,user"},
    {"{{ [3,1,2] | sort(reverse=true) }}{{ [{'a':2},{'a':1}] | sort(attribute='a') }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "[3, 2, 1][{'a': 1}, {'a': 2}]"},
    {"{{ 'a b c'.split(' ', 1) }}{{ 'a b c'.rsplit(' ', 1) }}{{ 'abc'.title() }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "['a', 'b c']['a b', 'c']Abc"},
    {"{{ true + 1 }}{{ 3 * 'ab' }}{{ [0] * 3 }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "2ababab[0, 0, 0]"},
    {"{{ 'x' if none is none }}{{ 1 in [1, 2] }}{{ 'b' in 'abc' }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "xTrueTrue"},
    {"{{ d | tojson(indent=2) }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "{\n  \"b\": [\n    1,\n    {\n      \"c\": null\n    }\n  ],\n  \"a\": \"x\"\n}"},
    {"{{ d.keys() }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "dict_keys(['b', 'a'])"},
    {"{{ (1, 2) | tojson }}{{ 1.0 | tojson }}{{ '\303\251' | tojson }}{{ '\\u2028' | tojson }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "[1, 2]1.0\"\303\251\"\"\342\200\250\""},
    {"{% set l = [1, 2, 3] %}{{ l | select('odd') | list }}{{ l | reject('even') | list }}{{ l | map('string') | join('-') }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "[1, 3][1, 3]1-2-3"},
    {"{{ range(5) | batch(2) | list }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "[[0, 1], [2, 3], [4]]"},
    {"{{ 'abc' | reverse }}{{ [1,2] | reverse | list }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "cba[2, 1]"},
    {"{{ 'A' ~ 1.0 ~ [1] ~ {'a': none} }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "A1.0[1]{'a': None}"},
    {"{% if messages[0]['role'] == 'system' %}{% set sys = messages[0]['content'] %}{% set msgs = messages[1:] %}{% else %}{% set sys = '' %}{% set msgs = messages %}{% endif %}{{ sys }}|{{ msgs | length }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "S|3"},
    {"{%- for m in messages -%}\n  {{- m.content -}}\n{%- endfor %}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "SUAU2"},
    {"{{ 5 is divisibleby(2) }}{{ 'abc' is lower }}{{ 'x' is in 'xyz' }}{{ none is sameas none }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "FalseTrueTrueTrue"},
    {"{{ 'The {} is {}'.format('sky', 'blue') }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "The sky is blue"},
    {"{{ 2 ** -1 }}{{ 7 % -3 }}{{ -7.5 // 2 }}{{ 7.5 % 2 }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "0.5-2-4.01.5"},
    {"{{ 'a' == 'a' and 'b' }}{{ 0 or '' }}|{{ 0 and 1 }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "b|0"},
    {"{{ '  x  ' | trim('x ') }}{{ 'aaa' | replace('a', 'b', 2) }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "bba"},
    {"{{ 1.23456 | round(2) }}{{ 2.5 | round }}{{ 3.5 | round }}{{ -2.5 | round }}{{ 2.675 | round(2) }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "1.232.04.0-2.02.67"},
    {"{{ 12 | string | length }}{{ '3' | int * 2 }}{{ 3.9 | int }}{{ '0x1A' | int }}{{ '1e3' | int }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "26301000"},
    {"{{ {'b':1,'a':2} | dictsort(by='value') }}{{ {'B':1,'a':2} | dictsort }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "[('b', 1), ('a', 2)][('a', 2), ('B', 1)]"},
    {"{% set ns = namespace(a=[]) %}{% set ns.a = ns.a + [1] %}{{ ns.a }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "[1]"},
    {"{{ x | default }}|{{ x | d('q') }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "|q"},
    {"{% for x in 'ab' %}{{ loop.cycle('odd', 'even') }}{% endfor %}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "oddeven"},
    {"{% for k in {'a':1,'b':2} %}{{ k }}{% endfor %}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "ab"},
    {"{{ {'a':1} | items | list }}{{ {'a':1} | length }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "[('a', 1)]1"},
    {"{{ [1, [2, 3]] | tojson(indent=1) }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "[\n 1,\n [\n  2,\n  3\n ]\n]"},
    {"{{ 'abc'[5:] }}|{{ 'abc'[-2:] }}|{{ [1,2,3][::-2] }}|{{ 'h\303\251llo'[1:3] }}|{{ 'h\303\251llo' | length }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "|bc|[3, 1]|\303\251l|5"},
    {"{{ messages[0] }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "{'role': 'system', 'content': 'S'}"},
    {"{{ 'ab\\ncd' | indent(2, first=true) }}|{{ 'ab\\n\\ncd' | indent('> ', blank=true) }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "  ab\n  cd|ab\n> \n> cd"},
    {"{{ 'a,b' | split(',') }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     NULL},
    {"{{ undefined_x | list }}{{ undefined_x | length }}{{ undefined_x | join(',') }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "[]0"},
    {"{{ [1,2,3] | max }}{{ ['b','A'] | min }}{{ [1,2] | sum(start=10) }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "3A13"},
    {"{% filter trim %}  spaced  {% endfilter %}|",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "spaced|"},
    {"{{ 'x' | wordcount }}{{ 'Hello' | lower | capitalize }}{{ 'o' * 0 }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "1Hello"},
    {"{{ '<a>' | e }}{{ '<a>' | escape | safe }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "&lt;a&gt;&lt;a&gt;"},
    {"{% set a = {'k': 'v'} %}{{ a.k }}{{ a['k'] }}{{ a.get('k') }}{{ a.missing }}|",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "vvv|"},
    {"{{ (messages | selectattr('role', 'equalto', 'user') | list)[0].content }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "U"},
    {"{{ messages | map(attribute='role') | unique | list }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "['system', 'user', 'assistant']"},
    {"{% for i in range(2) %}{% set ns2 = namespace(v=i) %}{{ ns2.v }}{% endfor %}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "01"},
    {"{{ 'abc'.upper().lower().replace('b', 'x') }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "axc"},
    {"{{ 1 < 2 < 3 }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "True"},
    {"{{ none.x }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     ""},
    {"{{ 'a'.nope }}|{{ 'a'.nope is defined }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "|False"},
    {"{{ loop }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     ""},
    {"{% for x in [1] %}{{ loop.length }}{{ loop.depth }}{% endfor %}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "11"},
    {"{{ 'abc' | first }}{{ 'abc' | last }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "ac"},
    {"{{ [1,2,3] | join(', ') | length }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "7"},
    {"{{ 3 // 0 }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     NULL},
    {"{{ 'a' + none }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     NULL},
    {"{{ {'a': {'b': [1, 2.5, 'x', none, true]}} }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "{'a': {'b': [1, 2.5, 'x', None, True]}}"},
    {"{{ \"a'b\" }}{{ ['a\\'b', 'c\"d', 'e\\'f\"g'] }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "a'b[\"a'b\", 'c\"d', 'e\\'f\"g']"},
    {"{{ [1.0, 1e-7, 1e22, 100.0, 0.1] }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "[1.0, 1e-07, 1e+22, 100.0, 0.1]"},
    {"{{ '\\x00\\x1f\\x7f\\xa0\303\251' | tojson }}{{ ['\\x7f\\x85\\xa0'] }}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}, {\"role\": \"assistant\", \"content\": \"A\"}, {\"role\": \"user\", \"content\": \"U2\"}], \"d\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}}",
     "\"\\u0000\\u001f\177\302\240\303\251\"['\\x7f\\x85\\xa0']"},
    {"{{ u is callable }}|{{ xs.keys }}|{{ m[1] }}|{{ m[xs] }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     "True|||"},
    {"{{ n[1:] }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     NULL},
    {"{{ m[1:] }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     NULL},
    {"{{ xs['a':] }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     NULL},
    {"{{ {'k': 1} | title }}|{{ 'hello-world (foo) [bar]' | title }}|{{ 'hello world'.title() }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     "{'k': 1}|Hello-World (Foo) [Bar]|Hello World"},
    {"{{ 0.0 is divisibleby 2 }}{{ 3.0 is divisibleby 1.5 }}{{ (1,) * 2 }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     "TrueTrue(1, 1)"},
    {"{{ (1, 'x') + [2] }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     NULL},
    {"{{ 1 | round }} {{ 2 | round(1) }} {{ true | round }} {{ 2.5 | round }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     "1 2 1 2.0"},
    {"{{ '[] a_b, c-d' | wordcount }} {{ [] | wordcount }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     "3 0"},
    {"{{ 0.1 is odd }} {{ 3.0 is odd }} {{ 4.0 is even }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     "False True True"},
    {"{{ x is defined(1) }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     NULL},
    {"{{ 5 | indent }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     NULL},
    {"{{ u | dictsort }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     NULL},
    {"{{ u | items | list }}",
     "{\"xs\": [1], \"m\": {\"k\": 1}, \"n\": 5}",
     "[]"},
};

static int failures;

static void check(bool ok, const char *what) {
    if (!ok) {
        printf("FAIL %s\n", what);
        failures++;
    }
}

static char *render(const char *tmpl, const char *ctx, const tport_template_limits *lim) {
    tport_template_limits l = lim ? *lim : (tport_template_limits){0};
    l.now = 1768478400; /* 2026-01-15 12:00 UTC, as the table's references */
    return tport_template_render(tmpl, strlen(tmpl), ctx, &l, NULL);
}

static void table(void) {
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const jcase *k = &CASES[i];
        char *got = render(k->tmpl, k->ctx, NULL);
        bool ok = k->want ? got && !strcmp(got, k->want) : !got;
        if (!ok) {
            printf("FAIL case %zu: %s\n  want: %s\n  got:  %s\n", i, k->tmpl, k->want ? k->want : "(an error)",
                   got ? got : tport_last_error());
            failures++;
        }
        free(got);
    }
}

/* filter chains of blocks (not in the table: written after it) */
static void block_filters(void) {
    char *got = render("{% filter upper | replace(\"A\", \"4\") %}abc{% endfilter %}", "{}", NULL);
    check(got && !strcmp(got, "4BC"), "a filter block's chain");
    free(got);
    got = render("{% set x | trim | upper %}  hi  {% endset %}[{{ x }}]", "{}", NULL);
    check(got && !strcmp(got, "[HI]"), "a set block's chain");
    free(got);
    got = render("{% filter is defined %}x{% endfilter %}", "{}", NULL);
    check(!got, "a test is not a filter");
    got = render("{{ 1 is in x }}", "{}", NULL);
    check(got && !strcmp(got, "False"), "nothing is in Undefined");
    free(got);
    /* a list wrapped 5000 times compares without exhausting the stack */
    got = render("{% set ns = namespace(a=1, b=1) %}{% for i in range(5000) %}{% set ns.a = [ns.a] %}"
                 "{% set ns.b = [ns.b] %}{% endfor %}{{ ns.a == ns.b }}{{ ns.a in [ns.b] }}", "{}", NULL);
    check(got && !strcmp(got, "FalseFalse"), "deep equality is bounded");
    free(got);
    got = render("{% set ns = namespace(a=1, b=2) %}{% for i in range(5000) %}{% set ns.a = [ns.a] %}"
                 "{% set ns.b = [ns.b] %}{% endfor %}{{ ns.a < ns.b }}", "{}", NULL);
    check(!got, "deep ordering fails cleanly");
}

static void error_lines(void) {
    char *got = render("a\nb\n{{ missing.x }}", "{}", NULL);
    check(!got && strstr(tport_last_error(), "line 3"), "an evaluation error names its line");
    got = render("a\n\n\n{% if %}", "{}", NULL);
    check(!got && strstr(tport_last_error(), "line 4"), "a syntax error names its line");
    got = render("{{ raise_exception('no tools here') }}", "{}", NULL);
    check(!got && strstr(tport_last_error(), "no tools here"), "raise_exception's message is the error");
    got = render("x", "{\"messages\": [", NULL);
    check(!got && strstr(tport_last_error(), "JSON"), "a bad context is refused");
    got = render("{{ n }}", "{\"n\": 123456789012345678901234567890}", NULL);
    check(!got, "a context integer beyond 64 bits is refused, not changed");
    got = render("{{ '123456789012345678901234567890' | int }}", "{}", NULL);
    check(!got, "int() beyond 64 bits is refused, not changed");
    got = render("x", "[1]", NULL);
    check(!got, "a context that is not an object is refused");
}

static void limits(void) {
    tport_template_limits out = {.max_output = 1000};
    char *got = render("{% for i in range(1000) %}xx{% endfor %}", "{}", &out);
    check(!got && strstr(tport_last_error(), "output"), "output is bounded");
    tport_template_limits steps = {.max_steps = 10000};
    got = render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "{}", &steps);
    check(!got && strstr(tport_last_error(), "steps"), "work is bounded");
    got = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{}", NULL);
    check(!got && strstr(tport_last_error(), "deeply"), "recursion is bounded");
    tport_template_limits mem = {.max_memory = 1 << 20};
    got = render("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "{}", &mem);
    check(!got, "memory is bounded");
    got = render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", "{}", NULL);
    check(!got && strstr(tport_last_error(), "deeply"), "a namespace holding itself does not print forever");
    got = render("{{ [1, 2, 3][1::9223372036854775807] }}{{ range(9223372036854775806, 9223372036854775807, 2) | list }}"
                 "{{ '{-5}'.format(1) }}", "{}", NULL);
    check(!got, "extreme slices and ranges stay defined; a negative format index is refused");
    free(got);
    got = render("{{ [1, 2, 3][1::9223372036854775807] }}{{ range(9223372036854775806, 9223372036854775807, 2) | list }}", "{}", NULL);
    check(got && !strcmp(got, "[2][9223372036854775806]"), "extreme slices and ranges");
    free(got);
    got = render("{{ range(200000) | length }}", "{}", NULL);
    check(!got && strstr(tport_last_error(), "Range too big"), "range is bounded as in the sandbox");
}

static void hostile(void) {
    /* deep nesting of every kind must fail cleanly, not exhaust the stack */
    static const char *const open[] = {"(", "[", "{'a':", "-", "not ", "x|f(", "{% if x %}", "{% for a in b %}"};
    for (size_t k = 0; k < sizeof open / sizeof open[0]; k++) {
        size_t n = 100000, len = strlen(open[k]);
        char *t = malloc(n * len + 8);
        strcpy(t, "{{ ");
        bool stmt = open[k][0] == '{' && open[k][1] == '%';
        size_t o = stmt ? 0 : 3;
        for (size_t i = 0; i < n; i++, o += len)
            memcpy(t + o, open[k], len);
        t[o] = 0;
        char *got = tport_template_render(t, o, "{}", NULL, NULL);
        check(!got, "deep nesting fails");
        free(got);
        free(t);
    }
    /* a NUL byte and invalid UTF-8 are text like any other */
    size_t n;
    static const char nul[] = "a\0b{{ 'x' }}\xff";
    char *got = tport_template_render(nul, sizeof nul - 1, "{}", NULL, &n);
    check(got && n == 5 && !memcmp(got, "a\0bx\xff", 5), "NUL and invalid UTF-8 pass through");
    free(got);
    const char *bad[] = {"{{", "{%", "{#", "{{ }}", "{% %}", "{{ 1 +", "{{ a.", "{{ a[ }}", "{% for %}", "{% set %}",
                         "{% macro %}", "{% call %}x{% endcall %}", "{{ 'a' | }}", "{{ x is }}", "{% raw %}", "{{ 99999999999999999999 }}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        got = render(bad[i], "{}", NULL);
        check(!got, bad[i]);
        free(got);
    }
}

int main(void) {
    table();
    block_filters();
    error_lines();
    limits();
    hostile();
    printf("%s: %zu table cases, %d failures\n", failures ? "FAIL" : "ok", sizeof CASES / sizeof CASES[0], failures);
    return failures ? 1 : 0;
}
