// The splits of llama.cpp's Tekken, GPT-4o, Granite embedding multilingual
// (97m), EXAONE MoE and Jais 2 pre-tokenizer regexes (which
// llama.cpp hands to std::regex, ECMAScript grammar) as JavaScript's own
// ECMAScript engine makes them, with the regex strings copied from
// llama-vocab.cpp: leftmost matches plus the text between them, as
// unicode_regex_split_stl.  The texts avoid U+0085 and U+FEFF, where
// JavaScript's \s and llama.cpp's differ.
// usage: node make_pretok_split_refs.mjs > tokenizer_split_refs.json
const regexes = {
  tekken: "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  "granite-embed-multi-97m": "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  "exaone-moe": "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
  "jais-2": "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
  "gpt-4o": "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
const texts = [
  "HelloWorld", "XMLHttpRequest", "AÉB ", "ÀBÇD ", "ABéCD x", "XÉY", "GRÜNE.", "ÖL", "McDonald's", "DON'T",
  "they're WE'LL i'm", "getHTTPResponseCode", " IPv6Address", "ΑθήναGreece", "MOSCOWМосква", "iPhone 12345678",
  "a/b\n/c", "x!\n/\r\n", "  two  spaces   ", "tabs\t\tand\nnewlines\n\n", "ÉCOLE normale", "ÉÉ ", "ÀÉÎõ",
  "İstanbul", "ǅungla", "ß", "A", " ", "", "1,234.56", "中文Chinese", "\u00A0A\u3000B", "'s", "X's", "!'ll",
  "hello big world", "a b  c", "e\u0301te\u0301 Ca\u0300 va", "x" + " ".repeat(20) + "y", " ".repeat(9), "\u0301abc",
  "Uber\u0308 MACHT\u0301s", "x /\n", "a  \n  b",
];
let seed = 7;
const rnd = (k) => { seed = (seed + 0x6D2B79F5) >>> 0; let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) % k; };
const alphabet = [..."ABCXYZabcxyzÉÀÇéàçΑαМм中 ' \n\r\t/!.,;1234"];
for (let i = 0; i < 60; i++) {
  let s = "";
  for (let n = 1 + rnd(16); n > 0; n--) s += alphabet[rnd(alphabet.length)];
  texts.push(s);
}
const out = {};
for (const [name, src] of Object.entries(regexes)) {
  const re = new RegExp(src, "gu");
  out[name] = texts.map((t) => {
    const pieces = [];
    let last = 0;
    for (const m of t.matchAll(re)) {
      if (m.index > last) pieces.push(t.slice(last, m.index));
      if (m[0].length === 0) continue;
      pieces.push(m[0]);
      last = m.index + m[0].length;
    }
    if (last < t.length) pieces.push(t.slice(last));
    return pieces;
  });
}
const lines = ["{", `"produced_by": "node make_pretok_split_refs.mjs (node ${process.version}), 2026-12-06",`,
               `"texts": ${JSON.stringify(texts)},`, '"pieces": {'];
Object.keys(out).forEach((k, i, a) => lines.push(`${JSON.stringify(k)}: ${JSON.stringify(out[k])}` + (i + 1 < a.length ? "," : "")));
lines.push("}", "}");
console.log(lines.join("\n"));
