// Throughput of the tiktoken npm package (the reference) on the sample files: median MB/s of
// encode_ordinary over 5 timed runs after a warm-up, one JSON line per encoding and file.
// Usage: node tiktoken_throughput.mjs SAMPLES_DIR FILE...
import { readFileSync } from "node:fs";
import { get_encoding } from "tiktoken";

const [dir, ...files] = process.argv.slice(2);
for (const encoding of ["cl100k_base", "o200k_base"]) {
  const enc = get_encoding(encoding);
  for (const file of files) {
    const bytes = readFileSync(`${dir}/${file}`);
    const text = new TextDecoder().decode(bytes);
    enc.encode_ordinary(text);  // warm-up
    const rates = [];
    let tokens = 0;
    for (let i = 0; i < 5; i++) {
      const t0 = process.hrtime.bigint();
      tokens = enc.encode_ordinary(text).length;
      const ns = Number(process.hrtime.bigint() - t0);
      rates.push(bytes.length / (ns / 1e9) / 1e6);
    }
    rates.sort((a, b) => a - b);
    console.log(JSON.stringify({ encoding, file, mb_per_s: rates[2], tokens }));
  }
  enc.free();
}
