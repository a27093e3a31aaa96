// A minimal MCP server over stdio for the tools tests: tools "ok" (answers "fine", and the
// process's start count) and "die" (exits at once, mid-call). Newline-delimited JSON-RPC.
import { createInterface } from "node:readline";
const started = Date.now();
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.method === "initialize")
    send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: "2025-06-18",
      capabilities: { tools: {} }, serverInfo: { name: "dying", version: "1" } } });
  else if (m.method === "tools/list")
    send({ jsonrpc: "2.0", id: m.id, result: { tools: [
      { name: "ok", inputSchema: { type: "object" } },
      { name: "die", inputSchema: { type: "object" } },
      { name: "bad.name", inputSchema: { type: "object" } }] } });
  else if (m.method === "tools/call" && m.params.name === "die") process.exit(3);
  else if (m.method === "tools/call")
    send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "fine since " + started }] } });
  else if (m.id !== undefined)
    send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no" } });
});
