// Regenerates expected.json: the reference token counts of every file in corpus/ (the
// estimator is fitted on these) and holdout/ (never fitted: it checks that the estimator
// generalises), from the
// `tiktoken` npm package (OpenAI's Rust core as WASM; encode_ordinary, so special-token text
// is ordinary text). Bytes are decoded the WHATWG way (one U+FFFD per maximal invalid
// sequence), keeping a BOM as text.
//
//   cd tests/data/tokens && npm install --no-save tiktoken@1.0.22 && node reference.mjs
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { get_encoding } from "tiktoken";

const encodings = ["cl100k_base", "o200k_base"];
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const out = { generator: "tiktoken@1.0.22 encode_ordinary", files: {} };
const enc = Object.fromEntries(encodings.map((e) => [e, get_encoding(e)]));
for (const dir of ["corpus", "holdout"]) {
  for (const name of readdirSync(dir).sort()) {
    const text = decoder.decode(readFileSync(`${dir}/${name}`));
    out.files[`${dir}/${name}`] = Object.fromEntries(
      encodings.map((e) => [e, enc[e].encode_ordinary(text).length]));
  }
}
for (const e of encodings) enc[e].free();
writeFileSync("expected.json", JSON.stringify(out, null, 2) + "\n");
console.log(`wrote expected.json for ${Object.keys(out.files).length} files`);
