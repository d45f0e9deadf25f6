// A full tool round trip through the official `openai` npm package, as an
// agent does it: the model is offered tools and (forced here: the test
// model is random) calls one; the client runs it and sends the call and
// its result back; streamed calls are assembled from their deltas the way
// the SDK's users do.  Run by test_serve_openai.sh against a server whose
// model carries a Hermes/Qwen chat template.
'use strict';
const mod = require('openai');
const OpenAI = mod.OpenAI || mod.default || mod;

const base = process.argv[2], key = process.argv[3];
const client = new OpenAI({ baseURL: base + '/v1', apiKey: key, maxRetries: 0, timeout: 60000 });
let fails = 0;
function check(name, cond, detail) {
  console.log((cond ? 'ok   ' : 'FAIL ') + name + (cond || detail === undefined ? '' : ': ' + JSON.stringify(detail)));
  if (!cond) fails++;
}

const tools = [{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 20 }, unit: { enum: ['c', 'f'] } },
                required: ['city', 'unit'] } } }];
function weather(args) { return JSON.stringify({ city: args.city, temperature: 21, unit: args.unit }); }

async function main() {
  const model = (await client.models.list()).data[0].id;
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const r = await client.chat.completions.create({ model, messages, tools, tool_choice: 'required', max_tokens: 200,
                                                   temperature: 0 });
  const msg = r.choices[0].message, call = msg.tool_calls && msg.tool_calls[0];
  check('the model calls the tool', r.choices[0].finish_reason === 'tool_calls' && call &&
        call.type === 'function' && call.function.name === 'get_weather', r.choices[0]);
  const args = JSON.parse(call.function.arguments);
  check('its arguments follow the schema', typeof args.city === 'string' && ['c', 'f'].includes(args.unit), args);

  // the round trip: the assistant's message as it came, then the tool's result
  messages.push(msg, { role: 'tool', tool_call_id: call.id, content: weather(args) });
  const after = await client.chat.completions.create({ model, messages, tools, max_tokens: 8, temperature: 0 });
  check('the answer after the tool result', after.choices[0].message.role === 'assistant' &&
        after.usage.prompt_tokens > r.usage.prompt_tokens, [after.choices[0], after.usage, r.usage]);

  // streamed: deltas assembled by index, as the SDK's users do
  const acc = [];
  let finish = null;
  const s = await client.chat.completions.create({ model, messages: messages.slice(0, 1), tools,
    tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 200, temperature: 0, stream: true });
  for await (const ch of s) {
    const d = ch.choices[0] && ch.choices[0].delta;
    for (const tc of (d && d.tool_calls) || []) {
      const a = acc[tc.index] || (acc[tc.index] = { id: '', name: '', arguments: '' });
      a.id += tc.id || ''; a.name += (tc.function && tc.function.name) || ''; a.arguments += (tc.function && tc.function.arguments) || '';
    }
    finish = (ch.choices[0] && ch.choices[0].finish_reason) || finish;
  }
  check('streamed call', acc.length === 1 && acc[0].name === 'get_weather' && acc[0].id &&
        JSON.stringify(JSON.parse(acc[0].arguments)) === JSON.stringify(args) && finish === 'tool_calls', [acc, finish]);
}

main().then(() => { console.log(fails ? fails + ' check(s) failed' : 'all checks passed'); process.exit(fails ? 1 : 0); },
            e => { console.log('FAIL unexpected error: ' + (e && e.stack || e)); process.exit(1); });
