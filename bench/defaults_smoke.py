#!/usr/bin/env python3
"""Defaults smoke: the built worker under DEFAULT settings, one long chat of realistic sizes.

Starts a small loopback OpenAI-compatible server (replies of ~100 words), queues TURNS turns of one chat
(user messages of 25-110 words), runs `autonous worker --drain` with nothing configured but the database
and the URL, once per strategy, and prints for each: the share of each turn's prompt that repeats the
previous turn's prompt as an exact prefix (what a provider's prompt cache can serve), and the number of
extra calls (summaries) per 100 turns. The prefix share leaves each prompt's last message out (the
question, where evidence goes); "whole requests" is the share of each prompt that is the whole previous
request as an exact prefix, over every turn. With --budgets (e.g. default,2000,4000,8000) the same runs at
each MAX_CONTEXT_TOKENS ("default" leaves it unset). Usage: bench/defaults_smoke.py BINARY [TURNS] [--budgets B,...]
"""
import json, os, random, re, sqlite3, subprocess, sys, tempfile, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

argv = sys.argv[1:]
budgets = ["default"]
if "--budgets" in argv:
    i = argv.index("--budgets"); budgets = argv[i + 1].split(","); del argv[i:i + 2]
binary = argv[0]
turns = int(argv[1]) if len(argv) > 1 else 150
requests = []
# A Zipf-distributed vocabulary of 6 000 made-up words: common words repeat, rare ones rarely do, as
# in real chat. No turn refers back to an earlier one, so any recalled evidence here is noise.
_syl = ["ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "ni", "pa", "qua", "ber", "li", "mon", "ta", "zen"]
vocab = [_syl[i % 16] + _syl[(i // 16) % 16] + (_syl[(i // 256) % 16] if i >= 256 else "") + (str(i // 4096) if i >= 4096 else "")
         for i in range(6000)]
_w = [1.0 / (k + 1) ** 1.07 for k in range(len(vocab))]
def sentence(r, n):
    return " ".join(r.choices(vocab, weights=_w, k=n))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        requests.append(body.get("messages", []))
        r = random.Random(len(requests))
        text = sentence(r, 100)
        data = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model", "m"),
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
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


def run(strategy, budget="default"):
    requests.clear()
    with tempfile.TemporaryDirectory() as d:
        env = {k: v for k, v in os.environ.items()
               if not re.match(r"(CONTEXT_|MAX_|HISTORY_|SUMMARY_|KEEP_|TOKEN_|OPENAI_|RECENT_)", k)}
        env.update(DB_PATH=os.path.join(d, "s.db"), OPENAI_BASE_URL=url, LOG_LEVEL="error", POLL_INTERVAL_MS="10")
        if strategy != "default":
            env["CONTEXT_STRATEGY"] = strategy
        if budget != "default":
            env["MAX_CONTEXT_TOKENS"] = budget
        subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True, timeout=30)
        r = random.Random(3)
        db = sqlite3.connect(env["DB_PATH"])
        db.executemany("INSERT INTO tasks(chat_id, text) VALUES (?, ?)",
                       [("smoke", f"turn {k}: " + sentence(r, r.randint(25, 110)))
                        for k in range(1, turns + 1)])
        db.commit(); db.close()
        subprocess.run([binary, "worker", "--drain"], env=env, capture_output=True, timeout=35)
        db = sqlite3.connect(env["DB_PATH"])
        ev = db.execute("SELECT coalesce(sum(json_extract(payload,'$.evidence_tokens')),0), "
                        "coalesce(sum(json_extract(payload,'$.estimated_tokens')),0), "
                        "avg(json_extract(payload,'$.estimated_tokens') * 1.0 / json_extract(payload,'$.budget_tokens')), "
                        "coalesce(sum(json_extract(payload,'$.evidence_tokens') > 0),0), count(*) "
                        "FROM events WHERE type='context.compressed'").fetchone()
        db.close()
    main, seen = [], set()
    for m in requests:
        k = re.match(r"turn (\d+):", m[-1].get("content") or "") if m else None
        if k and k.group(1) not in seen:
            seen.add(k.group(1)); main.append(m)
    extra = len(requests) - len(main)
    ser = lambda ms: "".join(f"\0{x.get('role')}\1{x.get('content')}" for x in ms[:-1])
    shares, first = [], None
    for i in range(1, len(main)):
        a, b = ser(main[i - 1]), ser(main[i])
        n = len(os.path.commonprefix([a, b]))
        if first is None and n < len(a): first = i
        if first is not None and i > first: shares.append(n / max(1, len(b)))
    share = sum(shares) / len(shares) if shares else 1.0
    # The same over whole requests: the share of each prompt that is the whole previous request
    # as an exact prefix (what a provider caches), the previous question and its evidence included.
    whole = lambda ms: "".join(f"\0{x.get('role')}\1{x.get('content')}" for x in ms)
    wshares = [len(os.path.commonprefix([whole(main[i - 1]), whole(main[i])])) / max(1, len(whole(main[i])))
               for i in range(1, len(main))]
    wshare = sum(wshares) / len(wshares) if wshares else 1.0
    return len(main), share, 100.0 * extra / max(1, len(main)), ev, wshare


print(f"Defaults smoke ({turns} turns of one chat, realistic sizes, nothing configured):", flush=True)
for budget, s in [(b, s) for b in budgets for s in ("default", "sliding_window", "summarize")]:
    if s == "default" and budget != "default":
        print(f"MAX_CONTEXT_TOKENS={budget}:", flush=True)
    try:
        n, share, extra, ev, wshare = run(s, budget)
        print(f"  {s:15s} turns answered {n:4d}   cacheable prefix share {share:4.2f} (whole requests {wshare:4.2f})"
              f"   extra calls/100 turns {extra:5.1f}"
              f"   evidence {100.0 * ev[0] / max(1, ev[1]):4.1f}% of prompt tokens, in {ev[3]}/{ev[4]} prompts"
              f"   mean fill {ev[2] or 0:4.2f}", flush=True)
    except Exception as e:  # noqa: BLE001 - a smoke test reports, it does not stop
        print(f"  {s:15s} could not run: {e}", flush=True)
print("  (targets: prefix share >= 0.85 for every strategy, <= 8 summary calls/100 turns; this chat never refers back,"
      " so recalled evidence should be rare: <= 3% of prompt tokens)")
