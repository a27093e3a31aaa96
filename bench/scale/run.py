#!/usr/bin/env python3
"""Scaling out: tasks/s of 1, 2 and 4 `autonous worker --drain` processes draining one queue,
on SQLite (one file, synchronous=FULL, the default) and on PostgreSQL (DATABASE_URL; durable
settings: run under `AUTONOUS_PG_DURABLE=1 scripts/with-postgres`), with the loopback stub
answering at once (the queue and the database are the bottleneck) and after 100 ms (a
provider's latency; each process WORKER_CONCURRENCY=32, so the ideal is 320 tasks/s a process).
Every other setting is the default (POLL_INTERVAL_MS 500, recall on, exact counting).

Usage: AUTONOUS_PG_DURABLE=1 scripts/with-postgres python3 bench/scale/run.py [TASKS] [ROUNDS]
Needs a built build/. Prints one table: tasks/s per backend, latency and processes, the median of
ROUNDS rounds (the order of backends alternates per round), and the ratios to 1 process.
"""
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("AUTONOUS_BIN", os.path.join(ROOT, "build/cmd/autonous/autonous"))
STUB = os.environ.get("AUTONOUS_STUB", os.path.join(ROOT, "build/cmd/autonous-stub/autonous-stub"))
PG = os.environ.get("AUTONOUS_TEST_PG_URL") or os.environ.get("PG_URL", "")


def pg_name(n):
    """The name of run `n`'s PostgreSQL database."""
    return f"autonous_scale_{os.getpid()}_{n}"


def start_stub(work, latency):
    port_file = os.path.join(work, f"port{latency}")
    proc = subprocess.Popen([STUB, "--port-file", port_file, "--latency-ms", str(latency)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(port_file) and open(port_file).read().strip():
            break
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{open(port_file).read().strip()}/v1"


def fresh_db(backend, work, n):
    """A migrated, empty database; returns the env that selects it."""
    if backend == "sqlite":
        path = os.path.join(work, f"scale{n}.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        env = {"DB_PATH": path}
    else:
        name = pg_name(n)
        subprocess.run(["psql", "-q", PG, "-c", f"CREATE DATABASE {name}"], check=True,
                       stdout=subprocess.DEVNULL)
        env = {"DATABASE_URL": PG.rsplit("/", 1)[0] + "/" + name}
    subprocess.run([BIN, "migrate"], env={**os.environ, **env}, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return env


def fill(backend, env, tasks, chats):
    sql = (f"INSERT INTO tasks(chat_id, text) SELECT 'chat' || (i % {chats}), "
           f"'load message ' || i FROM generate_series(0, {tasks - 1}) AS g(i)")
    if backend == "sqlite":
        sql = ("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < "
               f"{tasks - 1}) INSERT INTO tasks(chat_id, text) SELECT 'chat' || (i % {chats}), "
               "'load message ' || i FROM n")
        subprocess.run(["sqlite3", env["DB_PATH"], sql], check=True)
    else:
        subprocess.run(["psql", "-q", env["DATABASE_URL"], "-c", sql], check=True)


def done_count(backend, env):
    q = "SELECT count(*) FROM tasks WHERE status = 'done'"
    cmd = ["sqlite3", env["DB_PATH"], q] if backend == "sqlite" else \
        ["psql", "-tA", env["DATABASE_URL"], "-c", q]
    return int(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip())


def run(backend, work, n, base_url, latency, procs, tasks, slots=None, chats=400):
    """tasks/s of `procs` worker processes of `slots` slots each (32 with a latency, else 4)
    draining `tasks` queued in `chats` chats."""
    env = fresh_db(backend, work, n)
    fill(backend, env, tasks, chats)
    worker_env = {**os.environ, **env, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "k",
                  "LOG_LEVEL": "warn",
                  "WORKER_CONCURRENCY": str(slots or (32 if latency else 4))}
    start = time.monotonic()
    ps = [subprocess.Popen([BIN, "worker", "--drain"], env=worker_env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
          for _ in range(procs)]
    for p in ps:
        if p.wait() != 0:
            sys.exit(f"worker exited {p.returncode} ({backend}, {latency} ms, {procs} procs)")
    elapsed = time.monotonic() - start
    done = done_count(backend, env)
    if done != tasks:
        sys.exit(f"{done} of {tasks} done ({backend})")
    if backend == "postgres":
        subprocess.run(["psql", "-q", PG, "-c",
                        f"DROP DATABASE {pg_name(n)} WITH (FORCE)"],
                       check=True, stdout=subprocess.DEVNULL)
    return done / elapsed


def main():
    tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    if not PG:
        sys.exit("AUTONOUS_TEST_PG_URL is not set: run under scripts/with-postgres")
    work = tempfile.mkdtemp(prefix="autonous-scale.")
    stubs = {}
    try:
        for latency in (0, 100):
            stubs[latency] = start_stub(work, latency)
        results = {}
        n = 0
        for r in range(rounds):
            backends = ("sqlite", "postgres") if r % 2 == 0 else ("postgres", "sqlite")
            for latency in (0, 100):
                for procs in (1, 2, 4):
                    for backend in backends:
                        n += 1
                        rate = run(backend, work, n, stubs[latency][1], latency, procs, tasks)
                        results.setdefault((backend, latency, procs), []).append(rate)
                        print(f"round {r + 1}: {backend:8} {latency:3} ms {procs} proc "
                              f"{rate:8.1f} tasks/s", flush=True)
        print("\nbackend   stub    procs  tasks/s (median)  ÷ 1 proc   runs")
        for (backend, latency, procs), rates in sorted(results.items()):
            one = statistics.median(results[(backend, latency, 1)])
            med = statistics.median(rates)
            print(f"{backend:9} {latency:3} ms  {procs:5}  {med:16.1f}  {med / one:8.2f}   "
                  + " ".join(f"{x:.1f}" for x in rates))
    finally:
        for proc, _ in stubs.values():
            proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
