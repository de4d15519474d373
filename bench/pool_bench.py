#!/usr/bin/env python3
"""Benchmarks of `tx orchestrator start` (issue 4), on the real binary with real processes.

  recovery-supervised    an orchestrator with 2 workers (default settings); one runs a long task;
                         SIGKILL that worker; latency from the kill to the task's next claim
                         (the task.claimed event of its next attempt). p50 / p99 / max.
  recovery-heartbeat     an orchestrator with no workers of its own (it only reconciles) and 2
                         hand-started workers (heartbeat 1 s); SIGKILL the busy one 0.3-1.3 s
                         after its claim (the phases spread over a heartbeat interval); latency
                         from the kill to the claim by the other: detection by missed heartbeats.
  shutdown-idle          10 idle workers: SIGTERM to the orchestrator until it has exited, every
                         worker gone. Median of --runs.
  shutdown-busy          4 workers each running a 2 s task: SIGTERM; time to exit minus the time
                         the running tasks still needed ("task time + X").
  rss-50                 Rss, Pss and anonymous memory of an orchestrator supervising 50 idle
                         workers (and a worker's median).
  register               spawn of `tx worker start` to its worker.registered event (process start
                         included), p50 / p95; the Register transaction alone is
                         BM_RegisterWorker in bench/micro_bench.cc.

Prints a markdown table and a JSON line. Usage:
  bench/pool_bench.py --tx build/release/tx [--samples 30] [--runs 3] [--skip a,b]
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

TX = None


def env():
    return {k: v for k, v in os.environ.items() if not k.startswith("TX_")}


def tx(args, cwd, check=True):
    r = subprocess.run([TX] + args, cwd=cwd, capture_output=True, text=True, env=env())
    if check and r.returncode != 0:
        sys.exit(f"tx {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def db(cwd):
    return sqlite3.connect(os.path.join(cwd, ".tx", "tx.db"), timeout=30)


def query(cwd, sql, args=()):
    with db(cwd) as c:
        return c.execute(sql, args).fetchall()


def wait(pred, limit=60, what="condition"):
    deadline = time.time() + limit
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.005)
    sys.exit(f"timed out waiting for {what}")


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(p / 100 * (len(v) - 1)))))]


def start_orchestrator(cwd, extra):
    log = open(os.path.join(cwd, "orchestrator.out"), "a")
    p = subprocess.Popen([TX, "orchestrator", "start"] + extra, cwd=cwd, env=env(), stdout=log,
                         stderr=log, stdin=subprocess.DEVNULL)
    wait(lambda: query(cwd, "SELECT count(*) FROM orchestrators WHERE status = 'running'")[0][0],
         30, "the orchestrator to run")
    return p


def pool_pids(db_path):
    """Processes whose environment marks them as workers of this store's pool."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"TX_POOL_DB={db_path}".encode() in f.read().split(b"\0"):
                    out.append(int(pid))
        except OSError:
            pass
    return out


def stop(p, cwd):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    for pid in pool_pids(os.path.join(cwd, ".tx", "tx.db")):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def live_workers(cwd, status=None):
    sql = "SELECT id, pid FROM workers WHERE status NOT IN ('stopped', 'dead')"
    if status:
        sql += f" AND status = '{status}'"
    return query(cwd, sql)


def claimed_at(cwd, task_id, attempt):
    rows = query(cwd, "SELECT claimed_at FROM claims WHERE task_id = ? AND attempt = ?",
                 (task_id, attempt))
    return rows[0][0] if rows else None


def kill_busy_and_time(cwd, task_id, after_s=0.3):
    """Waits for task_id to run (attempt n), SIGKILLs its worker after_s later, returns ms until
    attempt n+1."""
    def running():
        r = query(cwd, "SELECT c.attempt, w.pid FROM claims c JOIN workers w ON w.id = c.worker_id "
                       "WHERE c.task_id = ? AND c.status = 'active'", (task_id,))
        return r[0] if r else None
    attempt, pid = wait(running, 30, "the task to run")
    time.sleep(after_s)  # let the agent start
    t0 = time.time() * 1000
    os.kill(pid, signal.SIGKILL)
    t1 = wait(lambda: claimed_at(cwd, task_id, attempt + 1), 30, "the task to be claimed again")
    return t1 - t0


def bench_recovery_supervised(samples):
    with tempfile.TemporaryDirectory(prefix="tx-bench-recover-") as d:
        tx(["init"], d)
        # Default heartbeat (30 s): supervised recovery does not wait for a missed heartbeat.
        # --max-backoff only so that 30 kills in a row do not leave a slot waiting 30 s to restart.
        p = start_orchestrator(d, ["--workers", "2", "--max-restarts", "1000", "--max-backoff", "500ms"])
        try:
            wait(lambda: len(live_workers(d, "idle")) == 2, 30, "2 idle workers")
            lat = []
            for _ in range(samples):
                t = json.loads(tx(["--json", "task", "add", "long", "--command", "sleep 30",
                                   "--max-attempts", "100"], d))
                lat.append(kill_busy_and_time(d, t["id"]))
                tx(["task", "cancel", t["id"]], d)
                wait(lambda: len(live_workers(d, "idle")) == 2, 30, "the pool to settle")
            return lat
        finally:
            stop(p, d)


def bench_recovery_heartbeat(samples):
    with tempfile.TemporaryDirectory(prefix="tx-bench-hb-") as d:
        tx(["init"], d)
        p = start_orchestrator(d, ["--workers", "0"])
        log = open(os.path.join(d, "workers.log"), "a")
        hand = []
        try:
            lat = []
            for i in range(samples):
                while len(live_workers(d)) < 2:
                    hand.append(subprocess.Popen(
                        [TX, "worker", "start", "--name", f"hand-{len(hand)}",
                         "--heartbeat-interval", "1s"], cwd=d, env=env(), stdout=log, stderr=log))
                    time.sleep(0.2)
                wait(lambda: len(live_workers(d, "idle")) == 2, 30, "2 idle hand workers")
                t = json.loads(tx(["--json", "task", "add", "long", "--command", "sleep 30",
                                   "--max-attempts", "100"], d))
                # Kill phases spread evenly over a whole heartbeat interval after the agent's start,
                # so that the kill falls at every point between two beats.
                lat.append(kill_busy_and_time(d, t["id"], 0.3 + i / samples))
                tx(["task", "cancel", t["id"]], d)
            return lat
        finally:
            for h in hand:
                if h.poll() is None:
                    h.send_signal(signal.SIGTERM)
            for h in hand:
                h.wait()
            stop(p, d)


def bench_shutdown_idle(runs, n=10):
    out = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="tx-bench-stop-") as d:
            tx(["init"], d)
            p = start_orchestrator(d, ["--workers", str(n), "--heartbeat-interval", "5s"])
            wait(lambda: len(live_workers(d, "idle")) == n, 60, f"{n} idle workers")
            time.sleep(0.5)
            t0 = time.time()
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=60)
            out.append((time.time() - t0) * 1000)
            left = pool_pids(os.path.join(d, ".tx", "tx.db"))
            if left:
                sys.exit(f"workers left after shutdown: {left}")
    return out


def bench_shutdown_busy(runs, n=4, task_s=2.0):
    out = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="tx-bench-stopbusy-") as d:
            tx(["init"], d)
            p = start_orchestrator(d, ["--workers", str(n), "--heartbeat-interval", "5s"])
            wait(lambda: len(live_workers(d, "idle")) == n, 60, f"{n} idle workers")
            for i in range(n):
                tx(["task", "add", f"t{i}", "--command", f"sleep {task_s}"], d)
            wait(lambda: query(d, "SELECT count(*) FROM tasks WHERE status = 'running'")[0][0] == n,
                 30, "the tasks to run")
            time.sleep(0.3)
            last_start = max(r[0] for r in query(d, "SELECT started_at FROM tasks")) / 1000
            t0 = time.time()
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=60)
            t1 = time.time()
            remaining = max(0.0, last_start + task_s - t0)
            done = query(d, "SELECT count(*) FROM tasks WHERE status = 'done'")[0][0]
            if done != n:
                sys.exit(f"only {done} of {n} running tasks finished at shutdown")
            out.append(((t1 - t0) - remaining) * 1000)
    return out


def memory_mb(pid):
    """Rss, Pss and Pss_Anon of a process, in MB. Rss counts every mapped page of the shared
    libraries (cpp-httplib brings OpenSSL's, about 3.4 MB) in full in each process; Pss shares
    them among the processes mapping them; Pss_Anon is the process's own heap and stacks."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        kb = {l.split(":")[0]: int(l.split()[1]) for l in f if l.split(":")[0] in
              ("Rss", "Pss", "Pss_Anon")}
    return {k: v / 1024 for k, v in kb.items()}


def bench_rss(n=50):
    with tempfile.TemporaryDirectory(prefix="tx-bench-rss-") as d:
        tx(["init"], d)
        p = start_orchestrator(d, ["--workers", str(n), "--max-workers", str(n),
                                   "--heartbeat-interval", "5s"])
        try:
            wait(lambda: len(live_workers(d, "idle")) == n, 120, f"{n} idle workers")
            time.sleep(3)
            workers = [memory_mb(pid) for _, pid in live_workers(d)]
            median = {k: statistics.median(w[k] for w in workers) for k in workers[0]}
            return memory_mb(p.pid), median
        finally:
            stop(p, d)


def bench_register(samples):
    with tempfile.TemporaryDirectory(prefix="tx-bench-reg-") as d:
        tx(["init"], d)
        log = open(os.path.join(d, "workers.log"), "a")
        lat = []
        for i in range(samples):
            t0 = time.time() * 1000
            w = subprocess.Popen([TX, "worker", "start", "--name", f"w{i}"], cwd=d, env=env(),
                                 stdout=log, stderr=log)
            at = wait(lambda: query(d, "SELECT registered_at FROM workers WHERE pid = ?", (w.pid,)),
                      30, "the registration")[0][0]
            lat.append(at - t0)
            w.send_signal(signal.SIGTERM)
            w.wait()
        return lat


def main():
    global TX
    ap = argparse.ArgumentParser()
    ap.add_argument("--tx", required=True)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--samples-heartbeat", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip", default="")
    a = ap.parse_args()
    TX = os.path.abspath(a.tx)
    skip = set(a.skip.split(","))
    if os.getloadavg()[0] > 1.0:
        print(f"caveat: load average {os.getloadavg()[0]:.1f} at start; the machine is busy",
              file=sys.stderr)
    out, rows = {}, []

    def row(text):
        rows.append(text)
        print(text, file=sys.stderr)

    if "recovery-supervised" not in skip:
        lat = bench_recovery_supervised(a.samples)
        out["recovery_supervised_ms"] = lat
        row(f"| recovery, supervised: SIGKILL of a busy worker → its task claimed again | p50 "
            f"**{statistics.median(lat):.0f} ms**, p99 {pct(lat, 99):.0f} ms, max {max(lat):.0f} ms "
            f"({len(lat)} kills) | p50 < 100 ms, p99 < 500 ms |")
    if "recovery-heartbeat" not in skip:
        lat = bench_recovery_heartbeat(a.samples_heartbeat)
        out["recovery_heartbeat_ms"] = lat
        row(f"| recovery, unsupervised (hand-started workers, heartbeat 1 s) | p50 "
            f"**{statistics.median(lat) / 1000:.2f} s**, min {min(lat) / 1000:.2f} s, max "
            f"{max(lat) / 1000:.2f} s ({len(lat)} kills over a heartbeat's phases) | p50 ≤ 1.0 s, "
            f"max ≤ 1.5 s |")
    if "shutdown-idle" not in skip:
        v = bench_shutdown_idle(a.runs)
        out["shutdown_idle_ms"] = v
        row(f"| graceful shutdown, 10 idle workers (SIGTERM → orchestrator exited, no worker left) "
            f"| median **{statistics.median(v):.0f} ms** (runs {', '.join(f'{x:.0f}' for x in v)}) "
            f"| < 1 s |")
    if "shutdown-busy" not in skip:
        v = bench_shutdown_busy(a.runs)
        out["shutdown_busy_extra_ms"] = v
        row(f"| graceful shutdown, 4 workers each running a 2 s task (every task finishes) | task "
            f"time + **{statistics.median(v):.0f} ms** (runs {', '.join(f'{x:.0f}' for x in v)}) "
            f"| task time + < 1 s |")
    if "rss-50" not in skip:
        orch, worker = bench_rss()
        out["memory_mb"] = {"orchestrator": orch, "worker_median": worker}
        row(f"| orchestrator RSS with 50 workers | **{orch['Rss']:.1f} MB** (a worker: "
            f"{worker['Rss']:.1f} MB); Pss {orch['Pss']:.1f} MB (a worker: {worker['Pss']:.1f} MB), "
            f"of which its own anonymous memory {orch['Pss_Anon']:.1f} MB (a worker: "
            f"{worker['Pss_Anon']:.1f} MB) | < 10 MB |")
    if "register" not in skip:
        lat = bench_register(a.samples)
        out["register_ms"] = lat
        row(f"| worker registration, process start → registered | p50 **{statistics.median(lat):.1f} "
            f"ms**, p95 {pct(lat, 95):.1f} ms ({len(lat)} starts) | p95 < 5 ms (Register itself) |")
    print("\n| benchmark | result | target |\n|---|---|---|")
    print("\n".join(rows))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
