// Load generator for `tport serve`: C clients, each sending streaming
// completions one after another for a fixed time; reports requests/s,
// generated tokens/s and time to first token (first streamed text).
//   node bench/serve_bench.js URL CLIENTS SECONDS [MAX_TOKENS] [PROMPT]
// Needs only Node 18+ (fetch); prints one JSON line.
'use strict';
const [url, clients = '1', seconds = '30', maxTokens = '32', prompt = 'Once upon a time'] = process.argv.slice(2);
if (!url) { console.error('usage: node serve_bench.js URL CLIENTS SECONDS [MAX_TOKENS] [PROMPT]'); process.exit(2); }

async function one(body) {
  const t0 = performance.now();
  const r = await fetch(url + '/v1/completions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  if (r.status !== 200) { await r.text(); return { status: r.status }; }
  let ttft = null, tokens = 0, buf = '';
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
      if (ttft === null && j.choices.length && j.choices[0].text) ttft = performance.now() - t0;
    }
  }
  return { status: 200, ttft, tokens, ms: performance.now() - t0 };
}

function pct(a, p) { if (!a.length) return null; const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; }

async function main() {
  const body = JSON.stringify({ prompt, max_tokens: +maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true } });
  const end = performance.now() + 1000 * +seconds, t0 = performance.now();
  const results = [];
  await Promise.all(Array.from({ length: +clients }, async () => {
    while (performance.now() < end) results.push(await one(body));
  }));
  const wall = (performance.now() - t0) / 1000, ok = results.filter(r => r.status === 200);
  const ttft = ok.map(r => r.ttft).filter(x => x !== null);
  console.log(JSON.stringify({
    clients: +clients, seconds: +wall.toFixed(1), requests: ok.length, errors: results.length - ok.length,
    requests_per_s: +(ok.length / wall).toFixed(3),
    tokens_per_s: +(ok.reduce((s, r) => s + r.tokens, 0) / wall).toFixed(1),
    ttft_ms_median: ttft.length ? +pct(ttft, 0.5).toFixed(0) : null, ttft_ms_p90: ttft.length ? +pct(ttft, 0.9).toFixed(0) : null,
    request_ms_median: ok.length ? +pct(ok.map(r => r.ms), 0.5).toFixed(0) : null,
  }));
}
main().catch(e => { console.error('serve_bench: ' + e); process.exit(1); });
