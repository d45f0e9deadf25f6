// Tokenizes strings with special-token text with llama.cpp (node-llama-cpp
// 3.21.1, prebuilt llama.cpp release v0.4.0) and every vocabulary of
// ../shared/models/vocab, loaded with vocabOnly: model.tokenize(text, ps) is
// common_tokenize(vocab, text, add_special=false, parse_special=ps); the
// add_bos/add_eos flags are llama_vocab_get_add_bos/eos (what add_special adds).
// usage: node make_tokenizer_special_refs.mjs VOCAB_DIR > tokenizer_special_refs.json
import {getLlama} from "node-llama-cpp";
const dir = process.argv[2] ?? "../shared/models/vocab";
const files = ["falcon","gpt-2","gpt-neox","llama-bpe","llama-spm","mpt","phi-3","qwen2","starcoder"];
const texts = [
  "Hello world",
  " Hello  world \n",
  "<s>Hello</s>",
  "<|endoftext|>x<|endoftext|>",
  "<|im_start|>user\nhi 12345<|im_end|>\n",
  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
  "<|user|>  hi<|end|>\n x <|assistant|>",
  "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
  "<fim_prefix>a<fim_suffix>b<fim_middle> <|endoftext|>",
  "<unk> <0x41>A",
  ">>ABSTRACT<< x >>INTRODUCTION<<",
];
const llama = await getLlama({gpu: false, build: "never"});
const out = {};
for (const f of files) {
  const model = await llama.loadModel({modelPath: `${dir}/ggml-vocab-${f}.gguf`, vocabOnly: true});
  const cases = [];
  for (const t of texts)
    for (const ps of [false, true])
      cases.push({text: t, parse_special: ps, ids: Array.from(model.tokenize(t, ps))});
  out[f] = {add_bos: model.tokens.shouldPrependBosToken, add_eos: model.tokens.shouldAppendEosToken,
            bos: model.tokens.bos ?? -1, eos: model.tokens.eos ?? -1, cases};
  await model.dispose();
}
console.log(JSON.stringify(out, null, 1));
