// tport serve through the official `openai` npm package: what real tools
// do.  Run by test_serve_openai.sh with NODE_PATH at its own install.
// Prints "ok ..." / "FAIL ..." lines; exits 1 if anything failed.
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
async function health() { return (await fetch(base + '/health')).json(); }

async function main() {
  const models = await client.models.list();
  const model = models.data[0].id;
  check('models.list', model === 'llama-2-tiny-random.gguf', models.data);

  const c = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 10, temperature: 0 });
  check('completions.create text', typeof c.choices[0].text === 'string' && c.choices[0].text.length > 0, c);
  check('completions.create usage', c.usage.prompt_tokens === 5 && c.usage.completion_tokens === 10 &&
        c.usage.total_tokens === 15, c.usage);

  let streamed = '', chunks = 0;
  const s = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 10, temperature: 0, stream: true });
  for await (const ch of s) { streamed += ch.choices[0] ? ch.choices[0].text : ''; chunks++; }
  check('completions stream = completion', streamed === c.choices[0].text, [streamed, c.choices[0].text]);
  check('completions stream token by token', chunks >= 5, chunks);

  const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Say hi' }];
  const chat = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, seed: 3 });
  const answer = chat.choices[0].message.content;
  check('chat.completions.create', chat.object === 'chat.completion' && chat.choices[0].message.role === 'assistant' &&
        typeof answer === 'string', chat);
  check('chat usage', chat.usage.completion_tokens > 0 && chat.usage.total_tokens ===
        chat.usage.prompt_tokens + chat.usage.completion_tokens, chat.usage);

  let deltas = '', usage = null, finish = null;
  const cs = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, seed: 3, stream: true,
                                                    stream_options: { include_usage: true } });
  for await (const ch of cs) {
    if (ch.choices.length) { deltas += ch.choices[0].delta.content || ''; finish = ch.choices[0].finish_reason || finish; }
    if (ch.usage) usage = ch.usage;
  }
  check('chat stream = chat', deltas === answer, [deltas, answer]);
  check('chat stream finish and usage', finish === chat.choices[0].finish_reason && usage &&
        usage.completion_tokens === chat.usage.completion_tokens, [finish, usage]);

  // two at once (the server runs --parallel 2)
  const both = await Promise.all([0, 1].map(() => client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, seed: 3 })));
  check('parallel chat requests', both.every(r => r.choices[0].message.content === answer), both.map(r => r.choices[0].message.content));

  // errors arrive as the client's typed errors
  try {
    await client.completions.create({ model, prompt: 'x', max_tokens: 1000000 });
    check('max_tokens beyond the context -> 400', false);
  } catch (e) {
    check('max_tokens beyond the context -> 400', e instanceof OpenAI.BadRequestError && e.status === 400 &&
          /max_tokens/.test(e.message), [e.status, e.message]);
  }
  // a field the server does not implement yet: refused, never answered as prose
  try {
    await client.chat.completions.create({ model, messages, max_tokens: 8, reasoning_effort: 'low' });
    check('reasoning_effort -> 400', false);
  } catch (e) {
    check('reasoning_effort -> 400', e instanceof OpenAI.BadRequestError && e.status === 400 &&
          e.param === 'reasoning_effort' && /reasoning_effort/.test(e.message), [e.status, e.param, e.message]);
  }
  // structured output: the answer parses and has the schema's shape
  const schema = { type: 'object', properties: { title: { type: 'string', maxLength: 24 }, year: { type: 'integer' } },
                   required: ['title', 'year'], additionalProperties: false };
  const so = await client.chat.completions.create({ model, messages, max_tokens: 200, temperature: 1, seed: 5, n: 2,
    response_format: { type: 'json_schema', json_schema: { name: 'book', strict: true, schema } } });
  check('json_schema answers parse and validate', so.choices.length === 2 && so.choices.every(ch => {
    const v = JSON.parse(ch.message.content);
    return Object.keys(v).join() === 'title,year' && typeof v.title === 'string' && Number.isInteger(v.year);
  }), so.choices.map(ch => ch.message.content));
  // log-probabilities in the client's types
  const lp = await client.chat.completions.create({ model, messages, max_tokens: 6, temperature: 0, logprobs: true,
                                                    top_logprobs: 2 });
  const content = lp.choices[0].logprobs.content;
  check('logprobs', content.length === lp.usage.completion_tokens && content.map(t => t.token).join('') ===
        lp.choices[0].message.content && content.every(t => t.top_logprobs.length === 2 && t.logprob <= 0), content);
  // the penalties go through the client and change the greedy text
  const pen = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 24, temperature: 0 });
  const pen2 = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 24, temperature: 0,
                                                 presence_penalty: 1.5, frequency_penalty: 0.5 });
  check('presence/frequency penalties change the text', pen.choices[0].text !== pen2.choices[0].text,
        [pen.choices[0].text, pen2.choices[0].text]);
  try {
    await new OpenAI({ baseURL: base + '/v1', apiKey: 'wrong', maxRetries: 0 }).models.list();
    check('wrong key -> 401', false);
  } catch (e) {
    check('wrong key -> 401', e instanceof OpenAI.AuthenticationError && e.status === 401, [e.status, e.message]);
  }

  // a client that aborts mid-stream frees its slot
  const ac = new AbortController();
  const long = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 200, stream: true },
                                               { signal: ac.signal });
  // (chunks already read from the socket may still be delivered after the
  // abort, so more than 3 can arrive; the stream must not run to its end)
  let got = 0;
  try { for await (const ch of long) { void ch; if (++got === 3) ac.abort(); } } catch (e) { void e; }
  let idle = false;
  for (let i = 0; i < 40 && !idle; i++) {
    const h = await health();
    idle = h.slots_idle === 2;
    if (!idle) await new Promise(r => setTimeout(r, 50));
  }
  check('aborted stream frees its slot', got >= 3 && got < 200 && idle, [got, idle]);
}

main().then(() => { console.log(fails ? fails + ' check(s) failed' : 'all checks passed'); process.exit(fails ? 1 : 0); },
            e => { console.log('FAIL unexpected error: ' + (e && e.stack || e)); process.exit(1); });
