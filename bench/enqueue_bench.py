#!/usr/bin/env python3
"""Benchmarks of adding tasks (issue 27), on the real binary, into a fresh SQLite store each run.

  bulk     `tx task add --batch FILE` of --tasks JSON lines (a title and a command each, as the
           peers' bulk workloads add no-op jobs): tasks/s over the whole process, start and exit
           included.
  single   one `tx task add TITLE --command true` process after another, --singles of them: the
           median time of one (the process's start, the store's open, one transaction, exit).

Each figure is the median of --runs runs with the spread (min-max). Prints a markdown table and a
JSON line. Usage:
  bench/enqueue_bench.py --tx build/release/tx [--tasks 100000] [--singles 200] [--runs 5]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone


def fresh_store(root):
    d = tempfile.mkdtemp(dir=root)
    subprocess.run([TX, "init"], cwd=d, check=True, capture_output=True)
    return d


def bulk(root, n):
    d = fresh_store(root)
    path = os.path.join(d, "tasks.jsonl")
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"title": "bench %d" % i, "command": ["true"]}) + "\n")
    t = time.perf_counter()
    r = subprocess.run([TX, "task", "add", "--batch", path], cwd=d, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit("tx task add --batch: exit %d: %s" % (r.returncode, r.stderr))
    return n / dt


def single(root, n):
    d = fresh_store(root)
    times = []
    for i in range(n):
        t = time.perf_counter()
        subprocess.run([TX, "task", "add", "t%d" % i, "--command", "true"], cwd=d, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "runs": len(values)}


def main():
    global TX
    p = argparse.ArgumentParser()
    p.add_argument("--tx", required=True)
    p.add_argument("--tasks", type=int, default=100000)
    p.add_argument("--singles", type=int, default=200)
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    TX = os.path.abspath(a.tx)
    with tempfile.TemporaryDirectory(prefix="tx-enqueue-bench.") as root:
        b = summary([bulk(root, a.tasks) for _ in range(a.runs)])
        s = summary([single(root, a.singles) for _ in range(a.runs)])
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print("| workload (%s) | median | spread |" % when)
    print("|---|---:|---:|")
    print("| bulk: tx task add --batch, %d tasks | %.0f tasks/s | %.0f-%.0f |" %
          (a.tasks, b["median"], b["min"], b["max"]))
    print("| single: one tx task add process | %.2f ms | %.2f-%.2f |" %
          (s["median"], s["min"], s["max"]))
    print(json.dumps({"bulk_tasks_per_s": b, "single_add_ms": s, "tasks": a.tasks,
                      "singles": a.singles, "at": when}))


if __name__ == "__main__":
    main()
