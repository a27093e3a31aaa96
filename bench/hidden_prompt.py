#!/usr/bin/env python3
"""The estimate against the count of a server that adds a hidden prompt (#28, docs/tokens.md).

For each case (tokens the server adds, model, the chats' content) the bundled stub
(`autonous-stub --hidden-prompt N`, which counts chars / 4 plus N: about 0.4 of the raw estimate
for English prose, more or less for code) answers TURNS turns of two chats taken in turn
(`autonous worker --drain`, the defaults but MAX_CONTEXT_TOKENS when --budgets names one). For
each case, budget and binary: the server's count per estimated token (`prompt_tokens_per_estimated`
of the `llm.response` events; the calibration aims at 1/1.05) over each chat's turns from FROM on,
its lowest and highest, the share of those turns outside [1/1.15, 1.05] (the issue: never more
than ~15 % above nor ~5 % below the server's count) and which turns they were, and the
calibration stored at the end.
Give several binaries to compare them in one run (the stub is the first binary's sibling).

Usage: bench/hidden_prompt.py BINARY [BINARY ...] [--turns N] [--from K] [--budgets default,2000,...]
       (defaults: 40 turns a chat, from turn 12, the defaults' budget only)
"""
import argparse, os, re, sqlite3, subprocess, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("binaries", nargs="+")
ap.add_argument("--turns", type=int, default=40)
ap.add_argument("--from", dest="start", type=int, default=12)
ap.add_argument("--budgets", default="default")
args = ap.parse_args()
stub = os.path.join(os.path.dirname(os.path.abspath(args.binaries[0])), "..", "autonous-stub", "autonous-stub")
ENGLISH = ("a question about rye bread, its sourdough starter, the crumb and the crust, and how long the "
           "dough should rest before it goes into a very hot oven")
CODE = "for (int i = 0; i < n; ++i) { total += weights[i] * values[i]; if (total > limit) break; }"
CASES = [(1000, "my-local-model", "english"), (1500, "claude-sonnet-4-5", "english"),
         (0, "my-local-model", "english"), (0, "my-local-model", "mixed"), (1000, "my-local-model", "mixed")]


def run(binary, hidden, model, content, budget):
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
            if budget != "default":
                env["MAX_CONTEXT_TOKENS"] = budget
            subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True, timeout=30)
            db = sqlite3.connect(env["DB_PATH"])
            rows = []
            for k in range(1, args.turns + 1):
                rows.append(("a", f"Turn {k}: {ENGLISH}"))
                rows.append(("b", f"Turn {k}: {CODE if content == 'mixed' else ENGLISH}"))
            db.executemany("INSERT INTO tasks(chat_id, text) VALUES (?, ?)", rows)
            db.commit(); db.close()
            subprocess.run([binary, "worker", "--drain"], env=env, check=True, capture_output=True, timeout=600)
            db = sqlite3.connect(env["DB_PATH"])
            per = {"a": [], "b": []}
            for chat, p in db.execute(
                    "SELECT t.chat_id, json_extract(e.payload,'$.prompt_tokens_per_estimated') FROM events e "
                    "JOIN tasks t ON t.id = e.task_id WHERE e.type='llm.response' "
                    "AND json_extract(e.payload,'$.call') = 'chat' ORDER BY e.id"):
                per[chat].append(p)
            cols = [r[1] for r in db.execute("PRAGMA table_info(token_calibration)")]
            added = "added_tokens" if "added_tokens" in cols else "0"
            cal = db.execute(f"SELECT scale, {added} FROM token_calibration").fetchone() or (1.0, 0)
            db.close()
            tail = [(i + 1, p) for c in per.values() for i, p in enumerate(c)
                    if i >= args.start - 1 and p is not None]
            return tail, cal
        finally:
            s.terminate(); s.wait()


print(f"two chats of {args.turns} turns each; server tokens per estimated token over each chat's turns "
      f"{args.start}-{args.turns}")
print("| server adds | model | chats | budget | binary | lowest | highest | outside [0.87, 1.05] | stored scale | stored added |")
print("|---|---|---|---|---|---|---|---|---|---|")
for budget in args.budgets.split(","):
    for hidden, model, content in CASES:
        for binary in args.binaries:
            tail, (scale, added) = run(binary, hidden, model, content, budget)
            out = sorted({t for t, p in tail if p < 1 / 1.15 or p > 1.05})
            n_out = sum(1 for _, p in tail if p < 1 / 1.15 or p > 1.05)
            where = "" if not out else " (turns " + (",".join(map(str, out)) if len(out) <= 6
                                                     else f"{out[0]}-{out[-1]}") + ")"
            ps = [p for _, p in tail]
            print(f"| {hidden} | {model} | {content} | {budget} | {binary} | {min(ps):.2f} | {max(ps):.2f} "
                  f"| {n_out}/{len(tail)}{where} | {scale:.2f} | {added} |", flush=True)
