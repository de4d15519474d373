#!/usr/bin/python3
"""fastpath.py: tx's designed recovery path, which the harness's orphan test cannot show.

The harness kills a whole worker unit (supervisor included), so for tx recovery there comes from
missed heartbeats. tx's own design is different: the orchestrator watches each worker's pidfd, and
when a worker dies while registered it kills the agent group left behind, marks the worker dead and
requeues its task in one transaction, which wakes the pool's idle workers.

This script measures that path with the harness's handler and timing:
  * a fresh SQLite store in /tmp; `tx orchestrator start --workers 4` (tx defaults: heartbeat 30 s,
    lease 30 min), plus --max-restarts 1000 --max-backoff 500ms so that ten kills in a row neither
    mark a slot failed (crash-loop protection: > 5 exits a minute) nor leave a slot waiting long to
    come back (these two only govern restarting the killed slot, not the requeue);
  * per trial: add one task whose command is ./bench-sleep (start record to $BENCH_START_FILE,
    sleep 60 s); wait for its start record; let it run BENCH_KILL_AGE_S (5 s, as the harness);
    `kill -9` the busy worker process ONLY (its agent lives in its own process group); time from
    the kill to the next start record (written by the agent of another worker);
  * then cancel the task and wait until the pool has 4 idle workers again.
Prints one JSON line (and writes it to the path given as argv[1], if any).

Usage: systems/tx/fastpath.py [OUT.json] [--trials 10]
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TX = os.environ.get("BENCH_TX_BIN") or shutil.which("tx") or "tx"


def main():
    args = sys.argv[1:]
    trials = 10
    if "--trials" in args:
        i = args.index("--trials")
        trials = int(args[i + 1])
        del args[i:i + 2]
    out_path = args[0] if args else None
    kill_age = float(os.environ.get("BENCH_KILL_AGE_S", "5"))
    for h in ("bench-done", "bench-sleep"):
        if not os.path.exists(os.path.join(HERE, h)):
            subprocess.run(["cc", "-O2", "-o", os.path.join(HERE, h), os.path.join(HERE, h + ".c")],
                           check=True)
    d = tempfile.mkdtemp(prefix="tx-fastpath-", dir="/tmp")
    start_file = os.path.join(d, "start")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TX_")}
    env.update({"BENCH_START_FILE": start_file, "BENCH_DONE_FILE": os.path.join(d, "done"),
                "BENCH_SLEEP_S": "60", "BENCH_WORKER_NAME": "pool"})

    def tx(*a, check=True):
        r = subprocess.run([TX] + list(a), cwd=d, env=env, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise SystemExit("tx %s: %s" % (" ".join(a), r.stderr))
        return r.stdout

    def txj(*a):
        return json.loads(tx("--json", *a))

    def starts():
        try:
            with open(start_file) as f:
                return [l.split() for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def wait(pred, limit, what):
        deadline = time.time() + limit
        while time.time() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(0.002)
        raise SystemExit("timed out waiting for " + what)

    def live(status=None):
        ws = [w for w in txj("worker", "list") if w["status"] not in ("stopped", "dead")]
        return [w for w in ws if status is None or w["status"] == status]

    tx("init")
    # The bench programs read BENCH_* variables, and a task gets only the worker's variables that
    # [worker] pass_env names (tx's default list is what agent CLIs need).
    with open(os.path.join(d, ".tx", "config.toml"), "w") as f:
        f.write('[worker]\npass_env = ["PATH", "HOME", "BENCH_*"]\n')
    log = open(os.path.join(d, "orchestrator.log"), "ab")
    orch = subprocess.Popen([TX, "orchestrator", "start", "--workers", "4", "--max-restarts", "1000",
                             "--max-backoff", "500ms"], cwd=d, env=env, stdout=log, stderr=log,
                            start_new_session=True)
    res = []
    try:
        for i in range(trials):
            wait(lambda: len(live("idle")) == 4, 60, "4 idle workers")
            n0 = len(starts())
            t = txj("task", "add", "long-%d" % i, "--command", os.path.join(HERE, "bench-sleep"),
                    "--max-attempts", "100")
            wait(lambda: len(starts()) > n0, 30, "the task to start")
            t_pick = int(starts()[n0][0])
            busy = wait(lambda: [w for w in live("busy") if w.get("current_task_id") == t["id"]], 10,
                        "its worker")[0]
            while (time.time_ns() - t_pick) / 1e9 < kill_age:
                time.sleep(0.005)
            t_kill = time.time_ns()
            os.kill(busy["pid"], signal.SIGKILL)
            again = wait(lambda: [s for s in starts()[n0 + 1:] if int(s[0]) > t_kill], 120,
                         "the task to start again")[0]
            rec = {"trial": i + 1, "recovery_ms": (int(again[0]) - t_kill) / 1e6,
                   "killed_worker": busy["name"], "job_age_at_kill_s": (t_kill - t_pick) / 1e9}
            show = txj("task", "show", t["id"])
            names = {w["id"]: w["name"] for w in txj("worker", "list")}
            rec["attempts"] = [{"n": a["n"], "worker": names.get(a["worker_id"]),
                                "status": a["status"], "end_reason": a.get("end_reason")}
                               for a in show.get("attempts", [])]
            res.append(rec)
            print(json.dumps(rec), file=sys.stderr, flush=True)
            tx("task", "cancel", t["id"])
    finally:
        try:
            os.kill(orch.pid, signal.SIGTERM)
            orch.wait(60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(orch.pid, signal.SIGKILL)
            orch.wait(10)
    lat = sorted(r["recovery_ms"] for r in res)
    summary = {"what": "tx fast path: orchestrator --workers 4 (defaults), kill -9 of the busy worker "
                       "only, kill -> start record of the task on another worker",
               "trials": len(lat), "p50_ms": statistics.median(lat), "min_ms": lat[0],
               "max_ms": lat[-1], "mean_ms": statistics.mean(lat),
               "loadavg_end": open("/proc/loadavg").read().split()[:3],
               "store": d, "runs": res}
    line = json.dumps(summary)
    print(line)
    if out_path:
        with open(out_path, "w") as f:
            f.write(line + "\n")
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
