#!/usr/bin/env python3
"""Context engine grid: the real `autonous worker --drain` on one long chat, per setting.

A loopback OpenAI-compatible stub (in process) answers chat calls with 50-400 words (--reply-words) and summary
calls with ~150 words; one chat of TURNS user messages (10-150 words, "turn N: ..." so the stub
can tell the turn's chat call from a summary call) is queued and drained once per setting:
MAX_CONTEXT_TOKENS x HISTORY_WINDOW x CONTEXT_STRATEGY, plus the pure defaults (nothing set).
Sizes are deterministic per --seed: user texts from the seed, each reply from (seed, turn), each
summary from (seed, request count).

Per run: turns answered; cacheable prefix share (defaults-smoke's definition: over the turns after
the first eviction, the mean of common prefix(previous, current prompt, each without its last
user message) / current); summary calls per 100 turns; prompt characters sent (chat + summary
calls) and /4 as tokens; cached share (sum over all chat turns of the common prefix of the whole
previous and current prompts / sum of the chat prompts); compactions (turns whose prefix broke);
median / max `build_us` of `context.compressed` (in ms) for compaction turns and for the others.
`build_us` includes a summarize compaction's summary call (instant here).

Usage: bench/context_grid/run.py [--bin PATH] [--turns 300] [--seed 1] [--timeout 600]
       [--only-defaults] [--budgets 4000,16000,unset] [--windows 20,50,400,unset]
       [--strategies token_budget,sliding_window,summarize] [--json] [--trace]
       [--user-words 10,150] [--reply-words 50,400]
"unset" leaves the variable out (budget: the gpt-4o-mini preset; window: the default, 100). --json prints one
JSON object per run instead of the table. Not part of the test suite.
"""
import argparse, json, os, random, re, sqlite3, statistics, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORDS = ("river stone garden window coffee letter market bridge winter summer engine ticket museum "
         "kitchen lesson doctor travel music paper forest camera island school dinner question "
         "because although remember explain different important yesterday tomorrow neighbourhood "
         "understand beautiful quickly carefully mountain ocean weather festival library picture "
         "umbrella breakfast telephone computer keyboard schedule meeting holiday journey village "
         "harbour lighthouse blanket pillow candle orchestra violin painter sculpture chemistry "
         "history geography mathematics grammar sentence paragraph chapter novel poem story "
         "the a of and to in is it that for on with as was at by an be this which or from "
         "would could should might perhaps usually often never always sometimes already still "
         "bicycle railway airport passport luggage hotel restaurant menu recipe vegetable fruit "
         "cheese bread butter honey pepper garlic onion tomato potato carrot lemon orange apple "
         "friendly curious anxious generous patient honest quiet noisy ancient modern enormous "
         "tiny invisible electric wooden silver golden crooked gentle stubborn brilliant").split()
TURN = re.compile(r"turn (\d+):")
ENV_DROP = re.compile(r"(CONTEXT_|MAX_|HISTORY_|SUMMARY_|KEEP_|TOKEN_|OPENAI_|RECENT_|SYSTEM_PROMPT)")
state = {"seed": 1, "requests": [], "reply": (50, 400)}  # requests: (kind, messages) in arrival order
lock = threading.Lock()


def words(r, lo, hi):
    return " ".join(r.choice(WORDS) for _ in range(r.randint(lo, hi)))


class Stub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        msgs = body.get("messages") or []
        last = msgs[-1] if msgs else {}
        m = TURN.match(last.get("content") or "") if last.get("role") == "user" else None
        with lock:
            state["requests"].append(("chat" if m else "summary", msgs))
            n = len(state["requests"])
        if m:  # the turn's own chat call: 50-400 words, the same for a turn in every run
            text = words(random.Random(f"{state['seed']}/reply/{m.group(1)}"), *state["reply"])
        else:
            text = words(random.Random(f"{state['seed']}/summary/{n}"), 140, 160)
        prompt = sum(len(x.get("content") or "") for x in msgs) // 4
        data = json.dumps({"id": f"c{n}", "object": "chat.completion", "model": body.get("model", "m"),
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": prompt, "completion_tokens": len(text) // 4,
                                     "total_tokens": prompt + len(text) // 4}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def ser(ms):
    return "".join(f"\0{x.get('role')}\1{x.get('content')}" for x in ms)


def common(a, b):
    """Length of the common prefix of a and b (binary search on slices: fast on long prompts)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if a[:mid] == b[:mid] else (lo, mid)
    return lo


def ms_stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    return f"{statistics.median(values) / 1000:.2f}/{max(values) / 1000:.2f}"


def run(args, url, strategy, budget, window):
    state["requests"] = []
    with tempfile.TemporaryDirectory(prefix="autonous-grid.") as d:
        env = {k: v for k, v in os.environ.items() if not ENV_DROP.match(k)}
        env.update(DB_PATH=os.path.join(d, "g.db"), OPENAI_BASE_URL=url, LOG_LEVEL="error",
                   POLL_INTERVAL_MS="10")
        for key, val in (("CONTEXT_STRATEGY", strategy), ("MAX_CONTEXT_TOKENS", budget),
                         ("HISTORY_WINDOW", window)):
            if val is not None:
                env[key] = str(val)
        subprocess.run([args.bin, "migrate"], env=env, check=True, capture_output=True, timeout=60)
        r = random.Random(f"{args.seed}/user")
        db = sqlite3.connect(env["DB_PATH"])
        task_turn = {}
        for k in range(1, args.turns + 1):
            cur = db.execute("INSERT INTO tasks(chat_id, text) VALUES (?, ?)",
                             ("grid", f"turn {k}: " + words(r, *args.user_words)))
            task_turn[cur.lastrowid] = k
        db.commit()
        started = time.monotonic()
        try:
            p = subprocess.run([args.bin, "worker", "--drain"], env=env, capture_output=True,
                               text=True, timeout=args.timeout)
            failure = f"exit {p.returncode}" if p.returncode else None
            stderr = p.stderr
        except subprocess.TimeoutExpired as e:
            failure = f"timeout after {args.timeout} s"
            stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        seconds = time.monotonic() - started
        if failure:
            db.close()
            return {"error": failure, "stderr_tail": stderr.strip().splitlines()[-8:]}
        answered = db.execute("SELECT count(*) FROM tasks WHERE status = 'done'").fetchone()[0]
        build = {}
        try:
            for task_id, us in db.execute(
                    "SELECT task_id, json_extract(payload, '$.build_us') FROM events "
                    "WHERE type = 'context.compressed' ORDER BY id"):
                build.setdefault(task_turn.get(task_id), us)  # the first build of a task
        except sqlite3.Error:
            pass
        db.close()
    chat, seen, summaries, sent, folds_before = [], set(), 0, 0, {}
    for kind, msgs in state["requests"]:
        sent += len(ser(msgs))
        if kind == "summary":
            summaries += 1
            pending_folds = folds_before.setdefault("pending", 0) + 1
            folds_before["pending"] = pending_folds
        elif (k := int(TURN.match(msgs[-1]["content"]).group(1))) not in seen:  # retries skipped
            seen.add(k)
            chat.append((k, msgs))
            folds_before[k] = folds_before.pop("pending", 0)
    shares, first, broke, cached, chat_chars = [], None, set(), 0, 0
    for i, (k, msgs) in enumerate(chat):
        whole = ser(msgs)
        chat_chars += len(whole)
        if i == 0:
            continue
        cached += common(ser(chat[i - 1][1]), whole)
        a, b = ser(chat[i - 1][1][:-1]), ser(msgs[:-1])
        n = common(a, b)
        if n < len(a):
            broke.add(k)
            first = i if first is None else first
        if first is not None and i > first:
            shares.append(n / max(1, len(b)))
        if args.trace:
            print(f"turn {k:4d} messages {len(msgs):3d} ~tokens {len(whole) // 4:6d} "
                  f"summary calls {folds_before.get(k, 0)} {'BROKE' if n < len(a) else ''}",
                  file=sys.stderr)
    return {"turns": answered, "prefix_share": round(sum(shares) / len(shares), 3) if shares else 1.0,
            "summary_calls_per_100": round(100.0 * summaries / max(1, len(chat)), 2),
            "prompt_chars": sent, "prompt_tokens_chars4": sent // 4,
            "cached_share": round(cached / max(1, chat_chars), 3), "compactions": len(broke),
            "build_ms_compaction": ms_stats([build.get(k) for k in broke]),
            "build_ms_other": ms_stats([v for k, v in build.items() if k not in broke]),
            "seconds": round(seconds, 1)}


def parse_list(text, allowed=None):
    out = []
    for item in text.split(","):
        item = item.strip()
        val = None if item == "unset" else (item if allowed else int(item))
        if allowed and item not in allowed:
            sys.exit(f"unknown strategy {item!r}; expected one of {', '.join(allowed)}")
        out.append(val)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/cmd/autonous/autonous"))
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run")
    ap.add_argument("--only-defaults", action="store_true")
    ap.add_argument("--budgets", default="4000,16000,unset")
    ap.add_argument("--windows", default="20,50,400,unset")
    ap.add_argument("--strategies", default="token_budget,sliding_window,summarize")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--user-words", default="10,150", help="user message length in words: LO,HI")
    ap.add_argument("--reply-words", default="50,400", help="reply length in words: LO,HI")
    ap.add_argument("--trace", action="store_true",
                    help="print each turn's chat prompt (messages, ~tokens, summary calls before it, "
                         "prefix broken) on stderr")
    args = ap.parse_args()
    state["seed"] = args.seed
    args.user_words = tuple(int(x) for x in args.user_words.split(","))
    state["reply"] = tuple(int(x) for x in args.reply_words.split(","))
    strategies = ("token_budget", "sliding_window", "summarize")
    grid = [(None, None, None)]
    if not args.only_defaults:
        grid += [(s, b, w) for b in parse_list(args.budgets) for w in parse_list(args.windows)
                 for s in parse_list(args.strategies, strategies)]

    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    if not args.json:
        print(f"Context grid: {args.turns} turns of one chat, seed {args.seed}, {args.bin}")
        print(f"{'strategy':14s} {'budget':>6s} {'window':>6s} {'turns':>5s} {'prefix':>6s} "
              f"{'sum/100':>7s} {'prompt chars':>12s} {'~tokens':>9s} {'cached':>6s} {'compact':>7s} "
              f"{'build ms compaction':>19s} {'build ms other':>14s} {'run s':>6s}")
    for strategy, budget, window in grid:
        try:
            row = run(args, url, strategy, budget, window)
        except Exception as e:  # noqa: BLE001 - one broken run must not stop the grid
            row = {"error": f"{type(e).__name__}: {e}", "stderr_tail": []}
        row = {"strategy": strategy or "default", "budget": budget or "unset",
               "window": window or "unset", **row}
        if args.json:
            print(json.dumps(row), flush=True)
        elif "error" in row:
            print(f"{row['strategy']:14s} {row['budget']!s:>6s} {row['window']!s:>6s} FAILED: {row['error']}")
            for line in row["stderr_tail"]:
                print(f"    | {line}")
        else:
            print(f"{row['strategy']:14s} {row['budget']!s:>6s} {row['window']!s:>6s} {row['turns']:5d} "
                  f"{row['prefix_share']:6.3f} {row['summary_calls_per_100']:7.2f} {row['prompt_chars']:12d} "
                  f"{row['prompt_tokens_chars4']:9d} {row['cached_share']:6.3f} {row['compactions']:7d} "
                  f"{row['build_ms_compaction']:>19s} {row['build_ms_other']:>14s} {row['seconds']:6.1f}",
                  flush=True)
    if not args.json:
        print("build ms = median/max of context.compressed build_us; prefix share target >= 0.85")
    server.shutdown()


if __name__ == "__main__":
    main()
