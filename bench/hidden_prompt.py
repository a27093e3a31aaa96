#!/usr/bin/env python3
"""What the server adds unseen: the estimate against the count of a server that adds a hidden prompt.

For each case (tokens the server adds, model) the bundled stub (`autonous-stub --hidden-prompt N`,
which counts chars / 4 plus N, about 0.4 of the raw estimate for English) answers TURNS turns of
one chat (about 150 characters a message) through `autonous worker --drain`, under the defaults.
Printed per case and binary: the range of `prompt_tokens_per_estimated` (the server's count per
estimated token; 1.0 is exact, the calibration aims at 1/1.05) over the turns from FROM on, and
the calibration stored at the end (scale, added_tokens). Give two binaries to compare them in one
run (the stub is the first binary's sibling).

Usage: bench/hidden_prompt.py BINARY [BINARY2] [--turns N] [--from K]   (defaults: 30, 12)
"""
import argparse, os, re, sqlite3, subprocess, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("binaries", nargs="+")
ap.add_argument("--turns", type=int, default=30)
ap.add_argument("--from", dest="start", type=int, default=12)
args = ap.parse_args()
stub = os.path.join(os.path.dirname(os.path.abspath(args.binaries[0])), "..", "autonous-stub", "autonous-stub")
CASES = [(1000, "my-local-model"), (1500, "claude-sonnet-4-5"), (0, "my-local-model")]
RYE = ("a question about rye bread, its sourdough starter, the crumb and the crust, and how long the "
       "dough should rest before it goes into a very hot oven")


def run(binary, hidden, model):
    with tempfile.TemporaryDirectory() as d:
        port_file = os.path.join(d, "port")
        s = subprocess.Popen([stub, "--port", "0", "--port-file", port_file, "--hidden-prompt", str(hidden)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                if os.path.exists(port_file) and open(port_file).read().strip():
                    break
                time.sleep(0.05)
            port = open(port_file).read().strip().split(":")[-1]
            env = {k: v for k, v in os.environ.items()
                   if not re.match(r"(CONTEXT_|MAX_|HISTORY_|SUMMARY_|KEEP_|TOKEN_|OPENAI_|RECENT_|RECALL|DATABASE_)", k)}
            env.update(DB_PATH=os.path.join(d, "f.db"), OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1",
                       OPENAI_MODEL=model, OPENAI_API_KEY="x", LOG_LEVEL="error", POLL_INTERVAL_MS="10")
            subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True, timeout=30)
            db = sqlite3.connect(env["DB_PATH"])
            db.executemany("INSERT INTO tasks(chat_id, text) VALUES (?, ?)",
                           [("c", f"Turn {k}: {RYE}") for k in range(1, args.turns + 1)])
            db.commit(); db.close()
            subprocess.run([binary, "worker", "--drain"], env=env, check=True, capture_output=True, timeout=300)
            db = sqlite3.connect(env["DB_PATH"])
            per = [r[0] for r in db.execute(
                "SELECT json_extract(payload,'$.prompt_tokens_per_estimated') FROM events "
                "WHERE type='llm.response' ORDER BY id")]
            cols = [r[1] for r in db.execute("PRAGMA table_info(token_calibration)")]
            added = "added_tokens" if "added_tokens" in cols else "0"
            cal = db.execute(f"SELECT scale, {added} FROM token_calibration").fetchone() or (1.0, 0)
            db.close()
            return per, cal
        finally:
            s.terminate(); s.wait()


print(f"{args.turns} turns; server tokens per estimated token over turns {args.start}-{args.turns}")
print("| server adds | model | binary | min | max | stored scale | stored added |")
print("|---|---|---|---|---|---|---|")
for hidden, model in CASES:
    for binary in args.binaries:
        per, (scale, added) = run(binary, hidden, model)
        tail = [p for p in per[args.start - 1:] if p is not None]
        print(f"| {hidden} | {model} | {binary} | {min(tail):.2f} | {max(tail):.2f} | {scale:.2f} | {added} |",
              flush=True)
