#!/usr/bin/env python3
"""What PostgreSQL's NOTIFY autonous_task_ended (#32, TASK_ENDED_NOTIFY, on by default) costs the
queue: PROCS worker processes of SLOTS slots each draining TASKS tasks against the instant stub
(where commits, not the model, are the limit), with TASK_ENDED_NOTIFY=on and =off alternately,
ROUNDS times each, on a durable server. Prints tasks/s per round and the median ratio on/off.

Usage: AUTONOUS_PG_DURABLE=1 scripts/with-postgres python3 bench/scale/notify.py \\
         [PROCS] [SLOTS] [TASKS] [ROUNDS]   (defaults 2 8 3000 3). Needs a built build/.
"""
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import PG, run, start_stub  # noqa: E402


def main():
    args = [2, 8, 3000, 3]
    for i, a in enumerate(sys.argv[1:5]):
        args[i] = int(a)
    procs, slots, tasks, rounds = args
    if not PG:
        sys.exit("AUTONOUS_TEST_PG_URL is not set: run under scripts/with-postgres")
    work = tempfile.mkdtemp(prefix="autonous-notify.")
    stub = start_stub(work, 0)
    rates = {"on": [], "off": []}
    try:
        n = 0
        for r in range(rounds):
            for setting in (("on", "off") if r % 2 == 0 else ("off", "on")):
                n += 1
                os.environ["TASK_ENDED_NOTIFY"] = setting
                rate = run("postgres", work, n, stub[1], 0, procs, tasks, slots=slots, chats=1000)
                rates[setting].append(rate)
                print(f"round {r + 1} TASK_ENDED_NOTIFY={setting:3}: {rate:7.1f} tasks/s", flush=True)
    finally:
        stub[0].kill()
        shutil.rmtree(work, ignore_errors=True)
    on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
    print(f"median: on {on:.1f}, off {off:.1f} tasks/s; on/off {on / off:.3f} "
          f"({procs} processes x {slots} slots, instant stub, {tasks} tasks)")


if __name__ == "__main__":
    main()
