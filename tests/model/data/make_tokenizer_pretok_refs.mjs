// Pre-tokenizers that have no vocabulary in llama.cpp's test suite: the
// GPT-2 vocabulary of ../shared/models/vocab with tokenizer.ggml.pre set to
// each name below (the value spliced into the file; it has no tensors),
// tokenized by llama.cpp through node-llama-cpp 3.21.1 (prebuilt llama.cpp
// release v0.4.0): model.tokenize(text, false) = common_tokenize(vocab,
// text, add_special=false, parse_special=false), on pseudo-random strings
// mixing scripts, digits, white space, punctuation and contractions.
// usage: node make_tokenizer_pretok_refs.mjs GPT2_VOCAB.gguf TMPDIR > tokenizer_pretok_refs.json
import {getLlama} from "node-llama-cpp";
import fs from "node:fs";

const [vocabPath, tmp] = process.argv.slice(2);
const pres = ["deepseek-llm", "deepseek-coder", "bloom", "viking", "command-r", "chatglm-bpe", "dbrx",
              "olmo", "stablelm2", "default", "tekken", "gpt-4o", "llama4", "deepseek-v3", "hunyuan-dense",
              "joyai-llm", "grok-2", "laguna", "afmoe", "tiny_aya", "cohere2moe", "seed-coder", "bailingmoe",
              "bailingmoe2", "llada-moe", "minicpm5", "granite-embed-multi-97m", "exaone-moe", "jais-2",
              "youtu"];
const N = 60;
let seed = 20261201;
const rnd = (k) => { seed = (seed * 1103515245 + 12345) >>> 0; return (seed >>> 8) % k; };
const pools = [
  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", "      ", "\t\n\r\n\n\v\f",
  "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "'s't're've'm'll'd'S'T'RE'VE'M'LL'D",
  "éèêëàâäôöûüçñÉÀßøåæœ", "\u0301\u0308\u0323\u064B\u093F", "你好世界中文字符测试", "한국어텍스트",
  "日本語のテキストカタカナ", "😀🎉👍🏽🦙", "\u00A0\u3000\u2028\u0085\u2009\u1680", "مرحبابالعالم", "नमस्तेदुनिया",
  "٠١٢٣٤٥٦٧٨٩", "ＡＢＣ１２３！？", "…。，、।۔،", "ΑΒΓαβγМосква", "½¼²³µ", "\u0001\u001F\u007F",
  "\u2581", "\u200B\u200D\uFEFF", "ǅǈǋ‘’“”",
  // whole words (an array: one element is taken, not one character)
  ["HelloWorld", "camelCaseWords", "XMLHttpRequest", "iPhone", "McDonald's", "DON'T", "ÉcoleNormale",
   "ÜberStraße", "getHTTPResponseCode", "they're", "WE'LL", " IPv6Address", "ΑθήναGreece", "MOSCOWМосква",
   "XÉY", "ÀBÇD ", "GRÜNE.", "ABéCD ", "ÖL"],
];
// ASCII words, digits, spaces, punctuation and the whole words four times
// as likely, so the strings exercise what tells the pre-tokenizers apart
for (const p of [...pools.slice(0, 6), pools[pools.length - 1]]) pools.push(p, p, p);
const texts = [];
for (let i = 0; i < N; i++) {
  let s = "";
  const len = 1 + rnd(30);
  for (let j = 0; j < len; j++) {
    const pool = pools[rnd(pools.length)];
    const p = Array.isArray(pool) ? pool : [...pool];
    const run = 1 + rnd(4);
    for (let k = 0; k < run; k++) s += p[rnd(p.length)];
  }
  texts.push(s);
}

// GGUF with no tensors: the value of one string key can be replaced in place.
function withPre(buf, pre) {
  const key = Buffer.from("tokenizer.ggml.pre");
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(key.length));
  const i = buf.indexOf(Buffer.concat([head, key]));
  const j = i + 8 + key.length;
  if (i < 0 || buf.readUInt32LE(j) !== 8) throw new Error("no string tokenizer.ggml.pre");
  const n = Number(buf.readBigUInt64LE(j + 4));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(pre)));
  return Buffer.concat([buf.subarray(0, j + 4), len, Buffer.from(pre), buf.subarray(j + 12 + n)]);
}

const llama = await getLlama({gpu: false, build: "never"});
const src = fs.readFileSync(vocabPath);
const out = {};
for (const pre of pres) {
  const path = `${tmp}/vocab-${pre}.gguf`;
  fs.writeFileSync(path, withPre(src, pre));
  const model = await llama.loadModel({modelPath: path, vocabOnly: true});
  out[pre] = texts.map((t) => Array.from(model.tokenize(t, false)));
  await model.dispose();
  fs.unlinkSync(path);
}
const lines = ['{', `"produced_by": ${JSON.stringify("node make_tokenizer_pretok_refs.mjs ../shared/models/vocab/ggml-vocab-gpt-2.gguf /tmp (node-llama-cpp 3.21.1, llama.cpp release v0.4.0), 2026-12-06")},`, '"texts": ['];
texts.forEach((t, i) => lines.push(" " + JSON.stringify(t) + (i + 1 < texts.length ? "," : "")));
lines.push("],", '"ids": {');
pres.forEach((pre, pi) => lines.push(`${JSON.stringify(pre)}: ${JSON.stringify(out[pre])}` + (pi + 1 < pres.length ? "," : "")));
lines.push("}", "}");
console.log(lines.join("\n"));
