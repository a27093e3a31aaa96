#!/usr/bin/env python3
"""The 2-core contention run of #30: N `autonous worker --drain` processes x 64 slots against the
loopback stub answering after 1 s (CPU is not the limit: the ideal is 64 tasks/s a process), on
SQLite (one file) and on PostgreSQL, every other setting the default. Prints tasks/s, the share
of the ideal and the ratio to one process, per backend and N.

Usage: AUTONOUS_PG_DURABLE=1 AUTONOUS_PG_EXTRA='-c max_connections=400' \\
         scripts/with-postgres python3 bench/scale/contention.py [PROCS,...] [TASKS_PER_PROC]
(defaults: 1,4 and 768). Needs a built build/.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import PG, run, start_stub  # noqa: E402

SLOTS = 64
LATENCY_MS = 1000


def main():
    procs_list = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "1,4").split(",")]
    per_proc = int(sys.argv[2]) if len(sys.argv) > 2 else 768
    if not PG:
        sys.exit("AUTONOUS_TEST_PG_URL is not set: run under scripts/with-postgres")
    work = tempfile.mkdtemp(prefix="autonous-contention.")
    stub = start_stub(work, LATENCY_MS)
    try:
        rates = {}
        n = 0
        for backend in ("sqlite", "postgres"):
            for procs in procs_list:
                n += 1
                rates[(backend, procs)] = run(backend, work, n, stub[1], LATENCY_MS, procs,
                                              per_proc * procs, slots=SLOTS,
                                              chats=max(400, procs * SLOTS * 2))
                print(f"{backend:8} {procs} x {SLOTS} slots: {rates[(backend, procs)]:7.1f} tasks/s",
                      flush=True)
        print(f"\nbackend   procs  tasks/s  of ideal ({SLOTS}/s a process)  ÷ 1 proc")
        for (backend, procs), rate in rates.items():
            one = rates.get((backend, 1))
            print(f"{backend:9} {procs:5}  {rate:7.1f}  {rate / (procs * SLOTS):6.2f}"
                  f"                     {rate / one if one else float('nan'):6.2f}")
    finally:
        stub[0].kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
