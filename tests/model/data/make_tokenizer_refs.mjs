// Tokenizes tricky strings with llama.cpp (through node-llama-cpp 3.21.1) and
// the vocabulary of llama-2-tiny-random.gguf.  model.tokenize calls
// common_tokenize(vocab, text, add_special=false, parse_special=false); with
// add_special=true llama.cpp only puts BOS in front (the space prefix rule is
// the same), so BOS (1) is prepended here.
import {getLlama} from "node-llama-cpp";
import fs from "node:fs";

const texts = [
  "", " ", "  ", "   ", "a", "\n", " leading space", "trailing space ", "two  spaces   three",
  "line one\nline two\n\n", "\ttab\tseparated\t", "\r\nwindows\r\n",
  "digits 0123456789 3.14159 1,000,000", "12345678901234567890",
  "punctuation!?.,;:'\"()[]{}<>@#$%^&*-_=+/\\|~`",
  "café naïve résumé Über Straße", "Ça va? Ἀθῆναι Москва",
  "你好，世界", "日本語のテキスト、カタカナ", "한국어 텍스트",
  "emoji 😀🎉 done", "👩‍👩‍👧 family", "नमस्ते", "مرحبا بالعالم",
  "<s> </s> <unk> <0x41>", "\u0001\u0002\u007f control bytes",
  "Hello world", " Hello world", "Hello  world", "hello\n\nworld", "   indented\n    code()",
  "def f(x):\n    return x*2\n", "int main(void) { return 0; }",
  "The quick brown fox jumps over the lazy dog.",
  "ＦＵＬＬＷＩＤＴＨ", "\u00a0nbsp\u00a0", "zero\u200bwidth", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math", "\u{10FFFD} private use",
];

const llama = await getLlama({gpu: false, build: "never"});
const model = await llama.loadModel({modelPath: process.argv[2], vocabOnly: true});
const rows = texts.map((text) => ({text, ids: [1, ...model.tokenize(text, false)]}));
const out = {
  produced_by: "node-llama-cpp 3.21.1 (llama.cpp release bundled with it), model.tokenize(text, false) on " +
    "llama-2-tiny-random.gguf loaded with vocabOnly; BOS (1) prepended = llama_tokenize(add_special=true, parse_special=false)",
  rows,
};
fs.writeFileSync(process.argv[3], JSON.stringify(out, null, 1) + "\n");
console.log(`${rows.length} rows written`);
await model.dispose();
await llama.dispose();
