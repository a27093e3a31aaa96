#!/usr/bin/env python3
"""Scale-out with many worker processes (#30): tasks/s of N `autonous worker --drain` processes of
SLOTS slots each, draining one queue, against the loopback stub answering after LATENCY ms, on
one SQLite file and on one PostgreSQL server, every other setting the default. For each
PostgreSQL run it also prints where the server's time went: pg_stat_statements' top statements
(when the extension can be created) and the wait events of active backends, sampled every 200 ms.

Usage: python3 bench/scale/manycore.py [--procs 1,2,4,8] [--slots 32] [--latency 100]
         [--tasks-per-proc 1600] [--backends postgres,sqlite] [--extra K=V,...] [--out FILE]
PostgreSQL's URL: AUTONOUS_TEST_PG_URL or PG_URL (a superuser's; a database is made per run).
Binaries: AUTONOUS_BIN and AUTONOUS_STUB, else build/'s. On a 16-core machine without Debian's
packages, bench/scale/device.sh runs it from a bundle (bench/scale/bundle.sh).
On this 2-core machine, #30's contention run with its diagnosis:
  AUTONOUS_PG_DURABLE=1 AUTONOUS_PG_EXTRA='-c max_connections=400 \\
    -c shared_preload_libraries=pg_stat_statements' scripts/with-postgres \\
    python3 bench/scale/manycore.py --procs 1,4 --slots 64 --latency 1000 --tasks-per-proc 768
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, PG, done_count, fill, fresh_db, pg_name, start_stub  # noqa: E402


def psql(url, sql):
    r = subprocess.run(["psql", "-tA", "-F", "\t", url, "-c", sql], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else ""


class Waits:
    """Samples pg_stat_activity's wait events every 200 ms while it runs, through one psql
    session (a new connection per sample would cost the server a process each time)."""

    def __init__(self, url):
        self.counts, self.stop = collections.Counter(), threading.Event()
        self.psql = subprocess.Popen(["psql", "-tA", "-q", url], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        # Active backends by wait event (CPU: none); the others by state (idle in transaction:
        # the client works between two statements of an open transaction).
        q = ("SELECT CASE WHEN state = 'active' THEN coalesce(wait_event_type || ':' || "
             "wait_event, 'CPU') ELSE state END FROM pg_stat_activity WHERE backend_type = "
             "'client backend' AND state <> 'idle' AND pid <> pg_backend_pid() "
             "AND datname <> 'postgres';\n\\echo --end\n")
        while not self.stop.is_set():
            self.psql.stdin.write(q)
            self.psql.stdin.flush()
            for line in iter(self.psql.stdout.readline, ""):
                if line.strip() == "--end":
                    break
                if line.strip():
                    self.counts[line.strip()] += 1
            self.stop.wait(0.2)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)
        self.psql.stdin.close()
        self.psql.wait(5)


def cpu_by_command():
    """CPU seconds used so far by every process and its reaped children, summed by command name
    (from /proc): exited workers count under the python3 that ran them, exited PostgreSQL
    backends under the postmaster ("postgres")."""
    total = collections.Counter()
    hz = os.sysconf("SC_CLK_TCK")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        total[name] += sum(int(f) for f in fields[11:15]) / hz
    return total


def run(args, backend, work, n, url, procs, extra):
    tasks = args.tasks_per_proc * procs
    env = fresh_db(backend, work, n)
    fill(backend, env, tasks, max(400, procs * args.slots * 2))
    stats = backend == "postgres" and psql(PG, "SELECT pg_stat_statements_reset()") != ""
    worker_env = {**os.environ, **env, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "k",
                  "LOG_LEVEL": "warn", "WORKER_CONCURRENCY": str(args.slots), **extra}
    waits = Waits(PG) if backend == "postgres" and os.environ.get("MANYCORE_WAITS", "1") == "1" \
        else None
    cpu_before = cpu_by_command()
    start = time.monotonic()
    if waits:
        waits.__enter__()
    try:
        logs = [open(os.path.join(work, f"worker{n}_{i}.log"), "w+") for i in range(procs)]
        ps = [subprocess.Popen([BIN, "worker", "--drain"], env=worker_env,
                               stdout=subprocess.DEVNULL, stderr=log) for log in logs]
        for p in ps:
            p.wait()
        failed = []
        for p, log in zip(ps, logs):
            log.seek(0)
            if p.returncode != 0:
                failed.append(log.read()[-300:])
            log.close()
    finally:
        if waits:
            waits.__exit__()
    elapsed = time.monotonic() - start
    cpu_after = cpu_by_command()
    done = done_count(backend, env)
    rec = {"backend": backend, "procs": procs, "slots": args.slots, "latency_ms": args.latency,
           "tasks": tasks, "done": done, "secs": round(elapsed, 2),
           "rate": round(done / elapsed, 1),
           "of_ideal": round(done / elapsed / (procs * args.slots * 1000 / max(args.latency, 1)), 3),
           "errors": failed[:1],
           # CPU ms per task by command over the run (the workers: "python3", see above)
           "cpu_ms_per_task": {k: round((cpu_after[k] - cpu_before[k]) * 1000 / max(done, 1), 2)
                               for k in cpu_after
                               if cpu_after[k] - cpu_before[k] > 0.02 * elapsed}}
    if waits:
        total = sum(waits.counts.values()) or 1
        rec["waits"] = [[w, c, round(c / total, 3)] for w, c in waits.counts.most_common(10)]
    if stats:
        top = psql(PG,
                   "SELECT round(total_exec_time::numeric), calls, round(mean_exec_time::numeric, 3), round(max_exec_time::numeric, 1),"
                   " left(regexp_replace(query, '\\s+', ' ', 'g'), 150) FROM pg_stat_statements "
                   f"WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '{pg_name(n)}') "
                   f"ORDER BY total_exec_time DESC LIMIT {os.environ.get('MANYCORE_TOP', 12)}")
        rec["top_statements"] = [line.split("\t") for line in top.splitlines()]
    if backend == "postgres":
        subprocess.run(["psql", "-q", PG, "-c",
                        f"DROP DATABASE {pg_name(n)} WITH (FORCE)"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", default="1,2,4,8")
    ap.add_argument("--slots", type=int, default=32)
    ap.add_argument("--latency", type=int, default=100)
    ap.add_argument("--tasks-per-proc", type=int, default=1600)
    ap.add_argument("--backends", default="postgres,sqlite")
    ap.add_argument("--extra", default="", help="worker settings, K=V,... (RECALL=off)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    backends = args.backends.split(",")
    if "postgres" in backends and not PG:
        sys.exit("no PostgreSQL: set AUTONOUS_TEST_PG_URL or PG_URL (scripts/with-postgres)")
    if "postgres" in backends:
        psql(PG, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    extra = dict(kv.split("=", 1) for kv in args.extra.split(",") if kv)
    work = tempfile.mkdtemp(prefix="autonous-manycore.")
    stub, url = start_stub(work, args.latency)
    results, n = [], 0
    try:
        for procs in [int(p) for p in args.procs.split(",")]:
            for backend in backends:
                n += 1
                rec = run(args, backend, work, n, url, procs, extra)
                results.append(rec)
                print(json.dumps(rec), flush=True)
    finally:
        stub.kill()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nbackend   procs x slots  tasks/s  of ideal  ÷ 1 proc   (stub {args.latency} ms)")
    for r in results:
        one = next((x["rate"] for x in results
                    if x["backend"] == r["backend"] and x["procs"] == 1), None)
        ratio = f"{r['rate'] / one:6.2f}" if one else "     -"
        print(f"{r['backend']:9} {r['procs']:5} x {r['slots']:<5} {r['rate']:7.1f}  "
              f"{r['of_ideal']:8.2f}  {ratio}")
    if args.out:
        json.dump(results, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
