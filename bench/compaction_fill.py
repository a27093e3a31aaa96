#!/usr/bin/env python3
"""Compaction fill: how full the prompt is on the turns that compact, with recall on and off.

A chat of short messages (users 5-30 words, replies 10-60, Zipf text that never refers back) runs
TURNS turns through `autonous worker --drain` against a loopback server, under the defaults except
MAX_CONTEXT_TOKENS (each budget given) and RECALL. For each run it prints, over the turns whose
`context.compressed` event says a compaction happened: their count, the mean fill
(estimated_tokens / budget_tokens), the mean evidence reserve and evidence tokens; and the mean fill
of all turns. The reserve kept for evidence that never comes is what lowers a compaction's fill.

Usage: bench/compaction_fill.py BINARY [TURNS] [BUDGET,...]   (defaults: 300, 2000,4000,8000)
"""
import json, os, random, re, sqlite3, subprocess, sys, tempfile, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

binary = sys.argv[1]
turns = int(sys.argv[2]) if len(sys.argv) > 2 else 300
budgets = [int(b) for b in (sys.argv[3] if len(sys.argv) > 3 else "2000,4000,8000").split(",")]
_syl = ["ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "ni", "pa", "qua", "ber", "li", "mon", "ta", "zen"]
vocab = [_syl[i % 16] + _syl[(i // 16) % 16] + (_syl[(i // 256) % 16] if i >= 256 else "") for i in range(4000)]
_w = [1.0 / (k + 1) ** 1.07 for k in range(len(vocab))]


def sentence(r, n):
    return " ".join(r.choices(vocab, weights=_w, k=n))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    count = 0

    def log_message(self, *args):
        pass

    def do_POST(self):
        json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        Handler.count += 1
        r = random.Random(Handler.count)
        data = json.dumps({"id": "x", "object": "chat.completion", "model": "m",
                           "choices": [{"index": 0, "message": {"role": "assistant",
                                                                "content": sentence(r, r.randint(10, 60))},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/v1"


def run(budget, recall):
    with tempfile.TemporaryDirectory() as d:
        env = {k: v for k, v in os.environ.items()
               if not re.match(r"(CONTEXT_|MAX_|HISTORY_|SUMMARY_|KEEP_|TOKEN_|OPENAI_|RECENT_|RECALL)", k)}
        env.update(DB_PATH=os.path.join(d, "f.db"), OPENAI_BASE_URL=url, LOG_LEVEL="error",
                   POLL_INTERVAL_MS="10", MAX_CONTEXT_TOKENS=str(budget), RECALL="on" if recall else "off")
        subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True, timeout=30)
        r = random.Random(5)
        db = sqlite3.connect(env["DB_PATH"])
        db.executemany("INSERT INTO tasks(chat_id, text) VALUES (?, ?)",
                       [("fill", f"turn {k}: " + sentence(r, r.randint(5, 30))) for k in range(1, turns + 1)])
        db.commit(); db.close()
        subprocess.run([binary, "worker", "--drain"], env=env, capture_output=True, timeout=120)
        db = sqlite3.connect(env["DB_PATH"])
        rows = db.execute("SELECT json_extract(payload,'$.estimated_tokens') * 1.0 / json_extract(payload,'$.budget_tokens'), "
                          "json_extract(payload,'$.compaction'), coalesce(json_extract(payload,'$.evidence_reserve'),0), "
                          "coalesce(json_extract(payload,'$.evidence_tokens'),0) "
                          "FROM events WHERE type='context.compressed'").fetchall()
        db.close()
    comp = [x for x in rows if x[1] not in (None, "none")]
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0
    return (len(rows), len(comp), mean([x[0] for x in comp]), mean([x[2] for x in comp]),
            mean([x[3] for x in comp]), mean([x[0] for x in rows]))


print(f"compaction fill, {turns} turns of short messages, defaults but MAX_CONTEXT_TOKENS and RECALL")
print(f"{'budget':>7} {'recall':>6} {'turns':>6} {'compactions':>11} {'fill on them':>12} "
      f"{'reserve':>8} {'evidence':>8} {'fill, all turns':>15}")
for budget in budgets:
    for recall in (True, False):
        n, c, fill, reserve, ev, all_fill = run(budget, recall)
        print(f"{budget:>7} {'on' if recall else 'off':>6} {n:>6} {c:>11} {fill:>12.2f} {reserve:>8.0f} {ev:>8.0f} {all_fill:>15.2f}",
              flush=True)
