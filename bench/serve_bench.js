// Load generator for an OpenAI-compatible server (tport serve, llama-server).
//
//   node bench/serve_bench.js URL CLIENTS SECONDS [MAX_TOKENS] [PROMPT]
//     C clients, each sending streaming completions one after another for a
//     fixed time; reports requests/s, generated tokens/s (the servers' own
//     usage counts) and time to first token (first streamed text).  Each
//     request's prompt is PROMPT followed by its client and request number,
//     so that no two requests share a whole prompt (a server's prompt cache
//     would otherwise answer them without evaluating anything).  Requests
//     ask for ignore_eos, so each generates MAX_TOKENS tokens on both
//     servers whatever the model predicts.
//
//   node bench/serve_bench.js URL prefix TOKENS
//     The repeated-conversation case: a chat of about TOKENS prompt tokens
//     (a long user turn), answered with one token; then the same chat with
//     that answer and one more short user turn.  Reports both times to the
//     first token; the second should reuse the first's cached prefix.
//
// Needs only Node 18+ (fetch); prints one JSON line.
'use strict';
const [url, mode = '1', arg2 = '30', maxTokens = '32', prompt = 'Once upon a time'] = process.argv.slice(2);
if (!url) {
  console.error('usage: node serve_bench.js URL CLIENTS SECONDS [MAX_TOKENS] [PROMPT]\n' +
                '       node serve_bench.js URL prefix TOKENS');
  process.exit(2);
}

// One streamed request; ttft is the time to the first event with text.
async function stream(path, body) {
  const t0 = performance.now();
  const r = await fetch(url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (r.status !== 200) { await r.text(); return { status: r.status }; }
  let ttft = null, tokens = 0, buf = '', text = '';
  const dec = new TextDecoder();
  for await (const part of r.body) {
    buf += dec.decode(part, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, k);
      buf = buf.slice(k + 2);
      if (!ev.startsWith('data: {')) continue;
      const j = JSON.parse(ev.slice(6));
      if (j.usage) tokens = j.usage.completion_tokens;
      const c = j.choices && j.choices.length ? j.choices[0] : null;
      const piece = c ? (c.text ?? (c.delta && c.delta.content) ?? '') : '';
      if (piece) {
        text += piece;
        if (ttft === null) ttft = performance.now() - t0;
      }
    }
  }
  return { status: 200, ttft, tokens, text, ms: performance.now() - t0 };
}

function pct(a, p) {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  return +s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(0);
}

async function load(clients, seconds) {
  const end = performance.now() + 1000 * seconds, t0 = performance.now();
  const results = [];
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let i = 0; performance.now() < end; i++) {
      // A dropped connection ("fetch failed") counts as one failed request
      // instead of ending the whole measurement without figures.
      results.push(await stream('/v1/completions', {
        prompt: `${prompt} (client ${c}, request ${i})`, max_tokens: +maxTokens, temperature: 0,
        ignore_eos: true, stream: true, stream_options: { include_usage: true },
      }).catch(e => ({ status: 'failed', error: String(e.cause ?? e) })));
    }
  }));
  const wall = (performance.now() - t0) / 1000, ok = results.filter(r => r.status === 200);
  const ttft = ok.map(r => r.ttft).filter(x => x !== null);
  const failed = results.find(r => r.status === 'failed');
  return {
    clients, seconds: +wall.toFixed(1), requests: ok.length, errors: results.length - ok.length,
    ...(failed ? { first_error: failed.error } : {}),
    requests_per_s: +(ok.length / wall).toFixed(3),
    tokens_per_s: +(ok.reduce((s, r) => s + r.tokens, 0) / wall).toFixed(1),
    ttft_ms_p50: pct(ttft, 0.5), ttft_ms_p99: pct(ttft, 0.99),
    request_ms_p50: pct(ok.map(r => r.ms), 0.5),
  };
}

async function prefix(tokens) {
  // About 1.3 tokens a word in English for the tokenizers of today's models;
  // the servers' usage says how many it really was.
  const words = 'the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches'.split(' ');
  const long = Array.from({ length: Math.ceil(tokens / 1.3) }, (_, i) => words[i % words.length]).join(' ');
  const messages = [{ role: 'system', content: 'You are a helpful assistant.' }, { role: 'user', content: long }];
  const first = await stream('/v1/chat/completions', { messages, max_tokens: 1, temperature: 0, stream: true, stream_options: { include_usage: true } });
  if (first.status !== 200) throw new Error(`first turn: HTTP ${first.status}`);
  messages.push({ role: 'assistant', content: first.text }, { role: 'user', content: 'And then?' });
  const second = await stream('/v1/chat/completions', { messages, max_tokens: 1, temperature: 0, stream: true, stream_options: { include_usage: true } });
  if (second.status !== 200) throw new Error(`second turn: HTTP ${second.status}`);
  // With one token to generate, a request that streams no text (a special
  // token) takes its whole time as the time to first token.
  const t1 = first.ttft ?? first.ms, t2 = second.ttft ?? second.ms;
  return { prefix_words: long.split(' ').length, first_ttft_ms: +t1.toFixed(0), second_ttft_ms: +t2.toFixed(0), ratio: +(t2 / t1).toFixed(3) };
}

async function main() {
  const out = mode === 'prefix' ? await prefix(+arg2) : await load(+mode, +arg2);
  console.log(JSON.stringify(out));
}
main().catch(e => { console.error('serve_bench: ' + e); process.exit(1); });
