#!/usr/bin/env python3
"""Benchmarks of `tx worker start` (issue 3), on the real binary with real processes.

  dispatch   latency from a task's creation (its created_at, written by `tx task add`) to its
             agent's first instruction (the agent is `date +%s%N`, whose output is its start
             time), with 1 and with 8 idle workers waiting (poll fallback 10 min, so only the
             store's change watch can wake them). Median and p99 of --samples tasks.
  drain      --tasks tasks whose command is /bin/true, drained by 4 workers: tasks/s from the
             workers' start to the last task done; against `xargs -P4 -n1 /bin/true` over the
             same count in the same run (the raw fork/exec rate of this machine).
  idle       RSS of an idle worker, and the CPU it uses heartbeating every 1 s (over --idle-secs).

Prints a markdown table and a JSON line. Usage:
  bench/worker_bench.py --tx build/bench/tx [--samples 50] [--tasks 2000] [--runs 3] [--sandbox bwrap]
"""
import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone


def tx(args, cwd, check=True):
    r = subprocess.run([TX] + args, cwd=cwd, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit(f"tx {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def start_worker(cwd, extra, log):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TX_")}
    return subprocess.Popen([TX, "worker", "start"] + extra, cwd=cwd, env=env,
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL)


def stop_all(workers):
    for w in workers:
        w.send_signal(signal.SIGTERM)
    for w in workers:
        try:
            w.wait(timeout=60)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()


def db(cwd):
    c = sqlite3.connect(os.path.join(cwd, ".tx", "tx.db"), timeout=30)
    return c


def wait_workers(cwd, n, status="idle", limit=60):
    deadline = time.time() + limit
    while time.time() < deadline:
        with db(cwd) as c:
            got = c.execute("SELECT count(*) FROM workers WHERE status = ?", (status,)).fetchone()[0]
        if got >= n:
            return
        time.sleep(0.05)
    sys.exit(f"only {got} of {n} workers became {status}")


def parse_iso_ms(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def pct(values, p):
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(round(p / 100 * (len(v) - 1)))))
    return v[k]


def bench_dispatch(n_workers, samples):
    with tempfile.TemporaryDirectory(prefix="tx-bench-dispatch-") as d:
        tx(["init"], d)
        log = open(os.path.join(d, "workers.log"), "w")
        workers = [start_worker(d, ["--poll-interval", "10m", "--heartbeat-interval", "30s"], log)
                   for _ in range(n_workers)]
        try:
            wait_workers(d, n_workers)
            time.sleep(0.5)
            lat = []
            for _ in range(samples):
                t = json.loads(tx(["--json", "task", "add", "probe", "--command", "date +%s%N"], d))
                deadline = time.time() + 30
                while True:
                    s = json.loads(tx(["--json", "task", "show", t["id"]], d))
                    if s["status"] == "done":
                        break
                    if time.time() > deadline:
                        sys.exit(f"task {t['id']} not done: {s}")
                    time.sleep(0.02)
                with open(os.path.join(d, ".tx", "logs", t["id"], "1.log")) as f:
                    started = int(f.read().strip()) / 1e9
                lat.append((started - parse_iso_ms(s["created_at"])) * 1000)
                time.sleep(0.05)  # let every worker settle back into its idle wait
            return lat
        finally:
            stop_all(workers)
            log.close()


def bench_drain(tasks, n_workers=4, extra=()):
    with tempfile.TemporaryDirectory(prefix="tx-bench-drain-") as d:
        tx(["init"], d)
        # Seeded in one transaction (`tx task add --batch`), not timed.
        lines = "".join(json.dumps({"title": f"t{i}", "command": ["/bin/true"]}) + "\n"
                        for i in range(tasks))
        r = subprocess.run([TX, "task", "add", "--batch", "-"], cwd=d, input=lines,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"tx task add --batch: exit {r.returncode}: {r.stderr}")
        log = open(os.path.join(d, "workers.log"), "w")
        t0 = time.time()
        workers = [start_worker(d, ["--poll-interval", "10m"] + list(extra), log)
                   for _ in range(n_workers)]
        try:
            while True:
                with db(d) as c:
                    done = c.execute("SELECT count(*) FROM tasks WHERE status = 'done'").fetchone()[0]
                if done >= tasks:
                    break
                time.sleep(0.01)
            elapsed = time.time() - t0
        finally:
            stop_all(workers)
            log.close()
        return tasks / elapsed


def bench_xargs(tasks):
    t0 = time.time()
    subprocess.run(f"seq {tasks} | xargs -P4 -n1 /bin/true", shell=True, check=True)
    return tasks / (time.time() - t0)


def bench_idle(secs):
    with tempfile.TemporaryDirectory(prefix="tx-bench-idle-") as d:
        tx(["init"], d)
        log = open(os.path.join(d, "worker.log"), "w")
        w = start_worker(d, ["--heartbeat-interval", "1s", "--poll-interval", "10m"], log)
        try:
            wait_workers(d, 1)
            time.sleep(1)
            tick = os.sysconf("SC_CLK_TCK")

            def cpu():
                with open(f"/proc/{w.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / tick
            c0, t0 = cpu(), time.time()
            time.sleep(secs)
            c1, t1 = cpu(), time.time()
            with open(f"/proc/{w.pid}/status") as f:
                rss_kb = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
            return rss_kb / 1024, 100 * (c1 - c0) / (t1 - t0)
        finally:
            stop_all([w])
            log.close()


def main():
    global TX
    ap = argparse.ArgumentParser()
    ap.add_argument("--tx", required=True)
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle-secs", type=float, default=20)
    ap.add_argument("--skip", default="", help="comma list of dispatch,drain,idle")
    ap.add_argument("--sandbox", default="",
                    help="also drain with workers in this sandbox (bwrap), interleaved")
    a = ap.parse_args()
    TX = os.path.abspath(a.tx)
    skip = set(a.skip.split(","))
    out = {}
    rows = []
    if "dispatch" not in skip:
        for k in (1, 8):
            lat = bench_dispatch(k, a.samples)
            out[f"dispatch_{k}"] = {"median_ms": statistics.median(lat), "p99_ms": pct(lat, 99),
                                   "min_ms": min(lat), "max_ms": max(lat)}
            rows.append(f"| dispatch, {k} idle worker{'s' if k > 1 else ''} | median "
                        f"**{statistics.median(lat):.1f} ms**, p99 {pct(lat, 99):.1f} ms "
                        f"(min {min(lat):.1f}, max {max(lat):.1f}; {len(lat)} tasks) | median < 20 ms, p99 < 100 ms |")
            print(rows[-1], file=sys.stderr)
    if "drain" not in skip:
        tx_rates, raw_rates, boxed_rates = [], [], []
        for _ in range(a.runs):
            raw_rates.append(bench_xargs(a.tasks))
            tx_rates.append(bench_drain(a.tasks))
            if a.sandbox:
                boxed_rates.append(bench_drain(a.tasks, extra=["--sandbox", a.sandbox]))
            print(f"drain run: tx {tx_rates[-1]:.0f}/s, xargs {raw_rates[-1]:.0f}/s"
                  + (f", tx in {a.sandbox} {boxed_rates[-1]:.0f}/s" if a.sandbox else ""),
                  file=sys.stderr)
        m_tx, m_raw = statistics.median(tx_rates), statistics.median(raw_rates)
        spread = 50 * (max(tx_rates) - min(tx_rates)) / m_tx
        out["drain"] = {"tx": tx_rates, "xargs": raw_rates, "tx_median": m_tx, "xargs_median": m_raw,
                        "ratio": m_tx / m_raw}
        rows.append(f"| drain-process: {a.tasks} × /bin/true, 4 workers | **{m_tx:.0f} tasks/s** "
                    f"(±{spread:.0f}%, runs {', '.join(f'{r:.0f}' for r in tx_rates)}) = "
                    f"**{100 * m_tx / m_raw:.0f}%** of xargs -P4 ({m_raw:.0f}/s) | ≥ 50% of raw |")
        if boxed_rates:
            m_box = statistics.median(boxed_rates)
            out["drain_sandboxed"] = {"sandbox": a.sandbox, "tx": boxed_rates, "tx_median": m_box,
                                      "ratio_to_unsandboxed": m_box / m_tx}
            rows.append(f"| drain-process in {a.sandbox}: {a.tasks} × /bin/true, 4 workers | "
                        f"**{m_box:.0f} tasks/s** (runs {', '.join(f'{r:.0f}' for r in boxed_rates)})"
                        f" = {100 * m_box / m_tx:.0f}% of unsandboxed in the same runs | — |")
    if "idle" not in skip:
        rss, cpu = bench_idle(a.idle_secs)
        out["idle"] = {"rss_mb": rss, "cpu_percent": cpu}
        rows.append(f"| idle worker | RSS **{rss:.1f} MB**; heartbeating every 1 s: **{cpu:.3f}%** of a core "
                    f"(over {a.idle_secs:.0f} s) | < 8 MB; < 0.1% |")
    print("| benchmark | result | target |")
    print("|---|---|---|")
    for r in rows:
        print(r)
    print("JSON " + json.dumps(out))


if __name__ == "__main__":
    main()
