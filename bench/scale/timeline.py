#!/usr/bin/env python3
"""Where a scale-out run's time goes (#30): N `autonous worker --drain` processes x 64 slots drain
TASKS_PER_PROC tasks each against the loopback stub answering after 1 s, every other setting the
default; then, from the tasks' claim and finish times and the llm.request / llm.response events:
the first claim after the processes started, finishes and claims per second, and per phase
(claim -> llm.request: the build; llm.request -> llm.response: the call) the 10th, 50th, 90th
and 99th percentiles in ms, for the first round of claims (cold processes) apart from the rest
(a task tried twice counts from its first claim to its last request).

Usage: [AUTONOUS_PG_DURABLE=1 AUTONOUS_PG_EXTRA='-c max_connections=400'] scripts/with-postgres \\
         python3 bench/scale/timeline.py [postgres|sqlite] [PROCS] [TASKS_PER_PROC]
(defaults: postgres, 4, 768). Needs a built build/ (AUTONOUS_BIN, AUTONOUS_STUB to override).
"""
import collections
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, PG, fill, fresh_db, pg_name, start_stub  # noqa: E402

SLOTS = 64


def rows(backend, env, sql):
    cmd = (["psql", "-tA", "-F", "|", env["DATABASE_URL"], "-c", sql] if backend == "postgres"
           else ["sqlite3", env["DB_PATH"], sql])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [line.split("|") for line in out.splitlines() if line]


def unix_ms(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


def pct(xs):
    xs = sorted(xs)
    return [round(xs[int(q * (len(xs) - 1))]) for q in (.1, .5, .9, .99)] if xs else []


def main():
    backend = sys.argv[1] if len(sys.argv) > 1 else "postgres"
    procs = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    per_proc = int(sys.argv[3]) if len(sys.argv) > 3 else 768
    if backend == "postgres" and not PG:
        sys.exit("AUTONOUS_TEST_PG_URL is not set: run under scripts/with-postgres")
    work = tempfile.mkdtemp(prefix="autonous-timeline.")
    stub, url = start_stub(work, 1000)
    try:
        env = fresh_db(backend, work, 1)
        fill(backend, env, per_proc * procs, max(400, procs * SLOTS * 2))
        wenv = {**os.environ, **env, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "k",
                "LOG_LEVEL": "warn", "WORKER_CONCURRENCY": str(SLOTS)}
        t0 = time.time() * 1000
        ps = [subprocess.Popen([BIN, "worker", "--drain"], env=wenv, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL) for _ in range(procs)]
        for p in ps:
            if p.wait() != 0:
                for other in ps:
                    other.kill()
                sys.exit(f"a worker exited {p.returncode}")
        elapsed = time.time() * 1000 - t0
        claimed = {int(i): int(c) - t0 for i, c in
                   rows(backend, env, "SELECT id, first_claimed_at FROM tasks")}
        ends = {int(i): unix_ms(f) - t0 for i, f in
                rows(backend, env, "SELECT id, finished_at FROM tasks")}
        finished = list(ends.values())
        calls = collections.defaultdict(dict)
        for task, kind, at in rows(backend, env, "SELECT task_id, type, created_at FROM events "
                                   "WHERE type IN ('llm.request', 'llm.response')"):
            calls[int(task)][kind] = unix_ms(at) - t0
        n = len(claimed)
        print(f"{backend} {procs} x {SLOTS} slots, {n} tasks: {elapsed / 1000:.2f} s, "
              f"{n / elapsed * 1000:.1f} tasks/s, {n / elapsed * 1000 / (procs * SLOTS):.3f} "
              "of the ideal")
        print(f"first claim {min(claimed.values()):.0f} ms after the start, last finish "
              f"{max(finished):.0f} ms, the processes' exit {elapsed:.0f} ms")
        per_s = collections.Counter(int(f // 1000) for f in finished)
        print("finished a second", [per_s[s] for s in range(max(per_s) + 1)])
        per_s = collections.Counter(int(c // 1000) for c in claimed.values())
        print("claimed a second ", [per_s[s] for s in range(max(per_s) + 1)])
        order = sorted(claimed, key=claimed.get)
        first = [i for i in order[:procs * SLOTS] if len(calls[i]) == 2]
        print(f"first round, ms after the start: claim p10/50/90/99 {pct([claimed[i] for i in first])}"
              f"  request {pct([calls[i]['llm.request'] for i in first])}")
        for name, ids in (("first round", order[:procs * SLOTS]), ("the rest", order[procs * SLOTS:])):
            ids = [i for i in ids if len(calls[i]) == 2]
            print(f"{name:11} build p10/50/90/99 {pct([calls[i]['llm.request'] - claimed[i] for i in ids])}"
                  f"  call {pct([calls[i]['llm.response'] - calls[i]['llm.request'] for i in ids])}"
                  f"  finish {pct([ends[i] - calls[i]['llm.response'] for i in ids])}")
        if backend == "postgres":
            subprocess.run(["psql", "-q", PG, "-c", f"DROP DATABASE {pg_name(1)} WITH (FORCE)"],
                           check=True, stdout=subprocess.DEVNULL)
    finally:
        stub.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
