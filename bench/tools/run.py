#!/usr/bin/env python3
"""A long tool-using chat under the defaults (#29): the built worker, a loopback OpenAI-compatible
server that calls a tool on most turns, and a loopback HTTP tool whose answers are realistic in size
(a few hundred bytes to 12 KB of JSON: order records, search hits, a log excerpt).

Queues TURNS turns of one chat (user messages of 25-110 words), declares one HTTP tool in a TOOLS_FILE,
runs `autonous worker --drain` with nothing else configured, and prints: turns answered, the share of
each turn's first prompt that repeats the previous turn's first prompt as an exact prefix (what a
provider's prompt cache can serve; the last message, the question, left out), the share of prompt
bytes that are tool results, the largest prompt against its budget (every request, tool steps
included), compactions, and how many results the last prompt carried cleared or cut.
With --budgets (e.g. default,8000) the same at each MAX_CONTEXT_TOKENS ("default" leaves it unset).
Usage: bench/tools/run.py BINARY [TURNS] [--budgets B,...]
"""
import json, os, random, re, sqlite3, subprocess, sys, tempfile, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

argv = sys.argv[1:]
budgets = ["default"]
if "--budgets" in argv:
    i = argv.index("--budgets"); budgets = argv[i + 1].split(","); del argv[i:i + 2]
binary = argv[0]
turns = int(argv[1]) if len(argv) > 1 else 300
requests = []
_syl = ["ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "ni", "pa", "qua", "ber", "li", "mon", "ta", "zen"]
vocab = [_syl[i % 16] + _syl[(i // 16) % 16] + (_syl[(i // 256) % 16] if i >= 256 else "") for i in range(4000)]
_w = [1.0 / (k + 1) ** 1.07 for k in range(len(vocab))]
def sentence(r, n):
    return " ".join(r.choices(vocab, weights=_w, k=n))


def tool_answer(r):
    """A realistic tool result: mostly small records, some search pages, a few long excerpts."""
    kind = r.random()
    if kind < 0.5:
        return json.dumps({"order": r.randint(1000, 99999), "status": r.choice(["shipped", "packed", "late"]),
                           "items": [{"sku": f"SKU-{r.randint(100, 999)}", "qty": r.randint(1, 4)}
                                     for _ in range(r.randint(1, 5))]})
    if kind < 0.85:
        return json.dumps({"hits": [{"title": sentence(r, 6), "snippet": sentence(r, 40), "score": r.random()}
                                    for _ in range(r.randint(4, 12))]})
    return json.dumps({"log": [f"2026-11-27T10:{i % 60:02d}:00Z " + sentence(r, 14) for i in range(r.randint(60, 110))]})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def reply(self, data):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith("/tool/"):
            r = random.Random(raw)
            return self.reply(tool_answer(r).encode())
        body = json.loads(raw)
        messages = body.get("messages", [])
        requests.append(body)
        r = random.Random(len(requests))
        last = messages[-1] if messages else {}
        # A question gets a tool call on 3 turns of 4; a tool result gets the answer.
        if last.get("role") == "user" and body.get("tools") and r.random() < 0.75:
            message = {"role": "assistant", "content": None,
                       "tool_calls": [{"id": f"call_{len(requests)}", "type": "function",
                                       "function": {"name": "lookup",
                                                    "arguments": json.dumps({"q": sentence(r, 4)})}}]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": sentence(r, r.randint(40, 120))}
            finish = "stop"
        data = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model", "m"),
                           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}).encode()
        self.reply(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]
url = f"http://127.0.0.1:{port}/v1"


def run(budget):
    requests.clear()
    with tempfile.TemporaryDirectory() as d:
        env = {k: v for k, v in os.environ.items()
               if not re.match(r"(CONTEXT_|MAX_|HISTORY_|SUMMARY_|KEEP_|TOKEN_|OPENAI_|RECENT_|TOOL)", k)}
        tools = os.path.join(d, "tools.json")
        with open(tools, "w") as f:
            json.dump({"tools": [{"name": "lookup", "description": "Looks up orders, documents and logs",
                                  "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                                  "url": f"http://127.0.0.1:{port}/tool/lookup"}]}, f)
        env.update(DB_PATH=os.path.join(d, "s.db"), OPENAI_BASE_URL=url, LOG_LEVEL="error",
                   POLL_INTERVAL_MS="10", TOOLS_FILE=tools)
        if budget != "default":
            env["MAX_CONTEXT_TOKENS"] = budget
        subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True, timeout=30)
        r = random.Random(3)
        db = sqlite3.connect(env["DB_PATH"])
        db.executemany("INSERT INTO tasks(chat_id, text) VALUES (?, ?)",
                       [("tools", f"turn {k}: " + sentence(r, r.randint(25, 110))) for k in range(1, turns + 1)])
        db.commit(); db.close()
        subprocess.run([binary, "worker", "--drain"], env=env, capture_output=True, timeout=600)
        db = sqlite3.connect(env["DB_PATH"])
        done = db.execute("SELECT count(*) FROM tasks WHERE status = 'done'").fetchone()[0]
        calls = db.execute("SELECT count(*) FROM events WHERE type = 'tool.call'").fetchone()[0]
        fill = db.execute("SELECT max(json_extract(payload, '$.estimated_tokens') * 1.0 / "
                          "json_extract(payload, '$.budget_tokens')), max(json_extract(payload, '$.budget_tokens')), "
                          "max(json_extract(payload, '$.tools_tokens')) FROM events WHERE type IN "
                          "('context.compressed', 'llm.request')").fetchone()
        over = db.execute("SELECT type, json_extract(payload, '$.step'), json_extract(payload, '$.estimated_tokens'), "
                          "json_extract(payload, '$.budget_tokens') FROM events WHERE type IN ('context.compressed', "
                          "'llm.request') AND json_extract(payload, '$.estimated_tokens') > "
                          "json_extract(payload, '$.budget_tokens') LIMIT 5").fetchall()
        if over:
            print("    over the budget:", over, flush=True)
        compactions = db.execute("SELECT count(*) FROM events WHERE type = 'context.compressed' AND "
                                 "json_extract(payload, '$.compaction') IS NOT NULL").fetchone()[0]
        last = db.execute("SELECT json_extract(payload, '$.tool_results_cleared.count'), "
                          "json_extract(payload, '$.tool_results_cut.count') FROM events WHERE type = "
                          "'context.compressed' ORDER BY id DESC LIMIT 1").fetchone()
        db.close()
    # Each turn's first request (its question last), in turn order.
    main, seen = [], set()
    for body in requests:
        m = body.get("messages", [])
        k = re.match(r"turn (\d+):", (m[-1].get("content") or "")) if m else None
        if k and k.group(1) not in seen:
            seen.add(k.group(1)); main.append(m)
    ser = lambda ms: "".join(f"\0{x.get('role')}\1{x.get('content')}\2{json.dumps(x.get('tool_calls'))}" for x in ms[:-1])
    shares = []
    for i in range(1, len(main)):
        a, b = ser(main[i - 1]), ser(main[i])
        shares.append(len(os.path.commonprefix([a, b])) / max(1, len(b)))
    share = sum(shares) / len(shares) if shares else 1.0
    total = sum(len(x.get("content") or "") for body in requests for x in body.get("messages", []))
    tool = sum(len(x.get("content") or "") for body in requests for x in body.get("messages", [])
               if x.get("role") == "tool")
    return done, calls, share, tool / max(1, total), fill, compactions, last


print(f"Tool-using chat ({turns} turns of one chat, one HTTP tool called on ~3 turns of 4, results 0.1-12 KB):",
      flush=True)
for budget in budgets:
    done, calls, share, tool_share, fill, compactions, last = run(budget)
    print(f"  MAX_CONTEXT_TOKENS={budget:8s} answered {done:4d}   tool calls {calls:4d}   cacheable prefix share "
          f"{share:4.2f}   tool results {100 * tool_share:4.1f}% of prompt bytes   largest prompt "
          f"{fill[0] or 0:4.2f} of its budget ({fill[1]} tokens, tools' declarations {fill[2]})   compactions "
          f"{compactions}   last prompt: results cleared {last[0]}, cut {last[1]}", flush=True)
print("  (targets: every turn answered, prefix share >= 0.85, largest prompt <= 1.00 of its budget)")
