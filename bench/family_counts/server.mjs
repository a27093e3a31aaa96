// A loopback OpenAI-compatible server that counts each prompt the way the model's own server
// would: the family's chat template rendered (the tokenizer_config.json's template where
// @lenml/tokenizers' Jinja runs it, written out below where it does not: Qwen's ChatML, Gemma's
// turns with the system prompt in the first user turn) and tokenized by the family's published
// tokenizer (@lenml/tokenizer-*, transformers.js's tokenizers), its `usage.prompt_tokens`. Replies
// are 80-120 words of English from the words file. Prints its port, then serves until killed.
// Usage: node server.mjs FAMILY WORDS_FILE   (FAMILY: llama3 | qwen3 | deepseek_v3 | gemma3)
import { createServer } from "node:http";
import { readFileSync } from "node:fs";

const [family, wordsFile] = process.argv.slice(2);
const { fromPreTrained } = await import(`@lenml/tokenizer-${family}`);
const tokenizer = fromPreTrained();
const words = readFileSync(wordsFile, "utf8").split(/\s+/).filter(Boolean);

const chatml = (msgs) =>
  msgs.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join("") +
  "<|im_start|>assistant\n";
const gemma = (msgs) => {
  let system = "";
  let out = "<bos>";
  for (const m of msgs) {
    if (m.role === "system") { system = m.content + "\n\n"; continue; }
    const role = m.role === "assistant" ? "model" : "user";
    out += `<start_of_turn>${role}\n${role === "user" ? system : ""}${m.content}<end_of_turn>\n`;
    if (role === "user") system = "";
  }
  return out + "<start_of_turn>model\n";
};

function promptTokens(msgs) {
  const plain = msgs.map((m) => ({ role: m.role, content: String(m.content ?? "") }));
  if (family === "qwen3") return tokenizer.encode(chatml(plain), { add_special_tokens: false }).length;
  if (family === "gemma3") return tokenizer.encode(gemma(plain), { add_special_tokens: false }).length;
  return tokenizer.apply_chat_template(plain, {
    tokenize: true, add_generation_prompt: true, return_tensor: false }).length;
}

let served = 0;
function reply() {
  served += 1;
  let seed = served * 2654435761 % 4294967296;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const n = 80 + Math.floor(next() * 41);
  const start = Math.floor(next() * (words.length - n));
  return words.slice(start, start + n).join(" ");
}

const server = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    let parsed;
    try { parsed = JSON.parse(body); } catch { res.writeHead(400).end("{}"); return; }
    const prompt = promptTokens(parsed.messages ?? []);
    const content = reply();
    const completion = tokenizer.encode(content, { add_special_tokens: false }).length;
    const data = JSON.stringify({
      id: `x${served}`, object: "chat.completion", model: parsed.model ?? "m",
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
      usage: { prompt_tokens: prompt, completion_tokens: completion,
               total_tokens: prompt + completion } });
    res.writeHead(200, { "Content-Type": "application/json",
                         "Content-Length": Buffer.byteLength(data) }).end(data);
  });
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
