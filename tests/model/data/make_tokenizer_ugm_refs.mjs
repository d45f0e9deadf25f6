// Tokenizes the texts of a directory made by ../ugm_vocab.py (textNN.txt)
// with llama.cpp (node-llama-cpp 3.21.1, prebuilt llama.cpp release v0.4.0)
// and Unigram vocabularies loaded with vocabOnly: model.tokenize(text,
// false) is common_tokenize(vocab, text, add_special=false,
// parse_special=false); add_bos/add_eos are llama_vocab_get_add_bos/eos
// (the binding's own calls: node-llama-cpp's shouldAppendEosToken is false
// whenever the vocabulary has no BOS, which T5's has not).
// A text that is not valid UTF-8 cannot be handed over as a JS string: its
// ids are null (not compared).
// usage: node make_tokenizer_ugm_refs.mjs TEXT_DIR NAME=GGUF... > tokenizer_ugm_refs.json
import {getLlama} from "node-llama-cpp";
import fs from "node:fs";
const dir = process.argv[2];
const texts = fs.readdirSync(dir).filter((f) => /^text\d+\.txt$/.test(f)).sort()
  .map((f) => fs.readFileSync(`${dir}/${f}`));
const llama = await getLlama({gpu: false, build: "never"});
const out = {};
for (const arg of process.argv.slice(3)) {
  const [name, path] = arg.split("=");
  const model = await llama.loadModel({modelPath: path, vocabOnly: true});
  const cases = [];
  for (const bytes of texts) {
    const text = new TextDecoder("utf-8", {fatal: false}).decode(bytes);
    const valid = Buffer.from(text, "utf-8").equals(bytes);
    cases.push({text, ids: valid ? Array.from(model.tokenize(text, false)) : null});
  }
  out[name] = {add_bos: model._model.shouldPrependBosToken(), add_eos: model._model.shouldAppendEosToken(),
               bos: model.tokens.bos ?? -1, eos: model.tokens.eos ?? -1, cases};
  await model.dispose();
}
console.log(JSON.stringify(out));
