#!/usr/bin/env python3
"""A CPU training loop in Python with no network and no torch, written
without ddlprof in mind: a loader thread makes each batch (a sleep of
--load-ms, as a read from slow storage blocks) and puts it on a
queue.Queue; the main thread takes the next batch from the queue and
computes on it (a busy loop of --compute-ms). The loader is the slower, so
the main thread waits in Queue.get() every step: in CPython, on a lock,
which is a POSIX semaphore.

It times its own steps, from taking one batch to taking the next, and
prints one JSON line:

  {"rank": R, "world": N, "steps": S, "step_s": [...], "mean_step_s": M}

(RANK and WORLD_SIZE from the environment, 0 and 1 without.)
"""
import argparse
import json
import os
import queue
import threading
import time

from sockstep import busy  # the same busy loop (this script's directory is on sys.path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--compute-ms", type=float, default=5.0)
    ap.add_argument("--load-ms", type=float, default=20.0)
    a = ap.parse_args()
    q = queue.Queue(maxsize=1)

    def loader():
        for i in range(a.steps):
            time.sleep(a.load_ms / 1e3)
            q.put(i)

    t = threading.Thread(target=loader, daemon=True)
    t.start()
    took = []
    for _ in range(a.steps):
        q.get()
        took.append(time.perf_counter())
        busy(a.compute_ms)
    t.join()
    steps = [b - a_ for a_, b in zip(took, took[1:])]
    print(json.dumps({"rank": int(os.environ.get("RANK", "0")), "world": int(os.environ.get("WORLD_SIZE", "1")),
                      "steps": len(steps), "step_s": steps,
                      "mean_step_s": sum(steps) / len(steps) if steps else None}), flush=True)


if __name__ == "__main__":
    main()
