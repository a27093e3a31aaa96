#!/usr/bin/env python3
"""Worker throughput with and without the operator surface being scraped once a second.

The real `autonous worker --drain` against the loopback stub (instant replies, so the worker is
bound by SQLite and CPU: the case a scraper disturbs most), WORKER_CONCURRENCY=4, on a database
seeded by a first run (so the pages have thousands of tasks and events to read). Each round runs
the same queue three times from a copy of the seed: HTTP_LISTEN unset; set; set with a client
fetching /metrics, /, /chats, a chat page and a task page every second (the order rotates
from round to round). Ratio = tasks/s
scraped over tasks/s not; each round's own ratio, because machines are noisy.

Usage: bench/ops/run.py [TASKS] [ROUNDS] [LATENCY_MS] [CONCURRENCY]
(defaults 3000, 3, 0 and 4; `6000 5 100 32` is the realistic case: a 100 ms provider, 32
slots). Needs a built build/."""

import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "build/cmd/autonous/autonous")
STUB = os.path.join(ROOT, "build/cmd/autonous-stub/autonous-stub")
TASKS = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
LATENCY_MS = int(sys.argv[3]) if len(sys.argv) > 3 else 0
CONCURRENCY = int(sys.argv[4]) if len(sys.argv) > 4 else 4
CHATS = 1000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def queue(db, n, offset):
    con = sqlite3.connect(db)
    con.executemany("INSERT INTO tasks(chat_id, text) VALUES (?, ?)",
                    [(f"chat{(offset + i) % CHATS}", f"load message {offset + i} about an order")
                     for i in range(n)])
    con.commit()
    con.close()


def scrape(base, stop, timings):
    last_task = 1
    while not stop.is_set():
        t0 = time.time()
        for path in ("/metrics", "/", "/chats", "/chat?id=chat7", f"/task?id={last_task}"):
            try:
                with urllib.request.urlopen(base + path, timeout=5) as r:
                    r.read()
            except OSError:
                pass
        timings.append(time.time() - t0)
        last_task += 97
        stop.wait(max(0.0, 1.0 - (time.time() - t0)))


def run(env, seed, work, listening, scraped):
    db = os.path.join(work, "run.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(seed + suffix):
            shutil.copy(seed + suffix, db + suffix)
    queue(db, TASKS, TASKS)
    env = dict(env, DB_PATH=db)
    stop = threading.Event()
    timings = []
    scraper = None
    if listening:
        port = free_port()
        env["HTTP_LISTEN"] = f"127.0.0.1:{port}"
    if scraped:
        scraper = threading.Thread(target=scrape, args=(f"http://127.0.0.1:{port}", stop, timings))
    t0 = time.time()
    worker = subprocess.Popen([BIN, "worker", "--drain"], env=env)
    if scraper:
        time.sleep(0.2)
        scraper.start()
    worker.wait()
    elapsed = time.time() - t0
    stop.set()
    if scraper:
        scraper.join()
    con = sqlite3.connect(db)
    done = con.execute("SELECT count(*) FROM tasks WHERE status = 'done'").fetchone()[0]
    con.close()
    assert done == 2 * TASKS, done
    return TASKS / elapsed, timings


def main():
    work = tempfile.mkdtemp(prefix="autonous-ops-bench-")
    port_file = os.path.join(work, "port")
    stub = subprocess.Popen([STUB, "--port-file", port_file, "--latency-ms", str(LATENCY_MS)],
                            stdout=subprocess.DEVNULL)
    try:
        while not (os.path.exists(port_file) and open(port_file).read().strip()):
            time.sleep(0.05)
        env = dict(os.environ, LOG_LEVEL="warn", POLL_INTERVAL_MS="50", WORKER_CONCURRENCY=str(CONCURRENCY),
                   OPENAI_BASE_URL=f"http://127.0.0.1:{open(port_file).read().strip()}/v1")
        env.pop("HTTP_LISTEN", None)
        seed = os.path.join(work, "seed.db")
        subprocess.run([BIN, "migrate"], env=dict(env, DB_PATH=seed), check=True,
                       stdout=subprocess.DEVNULL)
        queue(seed, TASKS, 0)
        subprocess.run([BIN, "worker", "--drain"], env=dict(env, DB_PATH=seed), check=True)
        print(f"seed: {TASKS} tasks done over {CHATS} chats; each run: {TASKS} more, "
              f"C={CONCURRENCY}, stub latency {LATENCY_MS} ms")
        ratios = []
        for r in range(ROUNDS):
            # The order rotates each round: no mode always runs first (or last) in its round.
            modes = [(False, False), (True, False), (True, True)]
            modes = modes[r % 3:] + modes[:r % 3]
            rates = {}
            for listen, scraped in modes:
                rates[(listen, scraped)] = run(env, seed, work, listen, scraped)
            off, _ = rates[(False, False)]
            listening, _ = rates[(True, False)]
            on, timings = rates[(True, True)]
            ratios.append((listening / off, on / off))
            print(f"round {r + 1}: HTTP_LISTEN unset {off:.1f} tasks/s; set, not scraped "
                  f"{listening:.1f} ({listening / off:.3f}); scraped 1 Hz {on:.1f} ({on / off:.3f}); "
                  f"{len(timings)} scrapes of 5 pages, median {1000 * statistics.median(timings):.1f} ms each")
        print(f"median ratios: listening {statistics.median(r[0] for r in ratios):.3f}, "
              f"scraped {statistics.median(r[1] for r in ratios):.3f} (1.0 = no drop)")
    finally:
        stub.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
