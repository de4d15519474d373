#!/usr/bin/env python3
"""What following an agent costs a worker (issue 21's target: under 5 % of a core at 10 MB/s).

A real `tx worker start` runs one task whose agent is bench/stream_agent.py under a profile of
the claude adapter: it prints Claude Code's stream-json at --mb-per-s for --seconds (a coding
session's mix, most of it tool results), which the worker reads, writes to the raw log (capped,
its tail kept), parses into the readable log and sums into the usage ledger. The worker's CPU
(utime + stime of its process, heartbeat thread included) over the agent's run is divided by the
run's wall time. Medians of --runs, with the spread (half the min..max range over the median).

  python3 bench/agent_stream_bench.py --tx build/release/tx [--mb-per-s 10] [--seconds 20]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def run_once(tx, mb_per_s, seconds):
    d = tempfile.mkdtemp(prefix="tx-stream-bench-")
    env = dict(os.environ)

    def txc(*args):
        return subprocess.run([tx] + list(args), cwd=d, env=env, check=True,
                              capture_output=True, text=True).stdout

    txc("init")
    with open(os.path.join(d, ".tx", "config.toml"), "w") as f:
        f.write('[agents.streamer]\nadapter = "claude"\nargv = ["python3", "%s", "--mb-per-s", '
                '"%s", "--seconds", "%s"]\n' % (os.path.join(HERE, "stream_agent.py"),
                                                mb_per_s, seconds))
    task = json.loads(txc("--json", "task", "add", "stream", "--agent", "streamer",
                          "--timeout", "10m"))["id"]
    worker = subprocess.Popen([tx, "worker", "start", "--poll-interval", "1s"], cwd=d, env=env,
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "w.log"), "w"))
    try:
        while json.loads(txc("--json", "task", "show", task))["status"] != "running":
            time.sleep(0.02)
        start, cpu0 = time.monotonic(), cpu_seconds(worker.pid)
        while True:
            t = json.loads(txc("--json", "task", "show", task))
            if t["status"] != "running":
                break
            time.sleep(0.05)
        wall, cpu = time.monotonic() - start, cpu_seconds(worker.pid) - cpu0
        usage = t["usage"] or {}
        raw = os.path.getsize(os.path.join(d, ".tx", "logs", task, "1.raw"))
        readable = os.path.getsize(os.path.join(d, ".tx", "logs", task, "1.log"))
        return {"status": t["status"], "wall_s": wall, "cpu_s": cpu, "percent": 100 * cpu / wall,
                "cost_usd": usage.get("cost_usd"), "raw_log": raw, "readable_log": readable}
    finally:
        worker.terminate()
        worker.wait()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tx", default=os.path.join(HERE, "..", "build", "release", "tx"))
    p.add_argument("--mb-per-s", type=float, default=10)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    results = []
    for i in range(a.runs):
        r = run_once(os.path.abspath(a.tx), a.mb_per_s, a.seconds)
        print("run %d: %s, worker %.2f cpu-s over %.1f s = %.2f %% of a core (raw log %d B, "
              "readable %d B, cost $%s)" % (i + 1, r["status"], r["cpu_s"], r["wall_s"],
                                            r["percent"], r["raw_log"], r["readable_log"],
                                            r["cost_usd"]))
        results.append(r)
    pct = sorted(r["percent"] for r in results)
    med = statistics.median(pct)
    spread = 100 * (pct[-1] - pct[0]) / 2 / med if med > 0 else 0
    print("median %.2f %% of a core (±%.0f %%; runs %s) at %.0f MB/s; target < 5 %%"
          % (med, spread, " · ".join("%.2f" % x for x in pct), a.mb_per_s))
    return 0 if med < 5 and all(r["status"] == "done" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
