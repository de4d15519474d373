"""tx driver: every subcommand but `worker` (see the header of ./driver for the design).

Enqueue goes through tx's HTTP API: `tx serve --http 127.0.0.1:0` is started for the call and one
producer POSTs /api/tasks N times over one keep-alive connection; only that loop is timed.
The system's view after a run comes from the tx CLI (`--json`).
"""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TX = os.environ.get("BENCH_TX_BIN") or shutil.which("tx") or "tx"
COMMAND = {"true": [os.path.join(HERE, "bench-done")], "sleep": [os.path.join(HERE, "bench-sleep")]}


def out(o):
    print(json.dumps(o), flush=True)


def profile():
    return os.environ.get("BENCH_PROFILE", "default")


def store_dir():
    return os.path.join(os.path.dirname(os.environ["BENCH_DONE_FILE"]), "tx")


def env():
    return {k: v for k, v in os.environ.items() if not k.startswith("TX_")}


def tx(*args, check=True):
    cwd = store_dir() if os.path.isdir(store_dir()) else HERE
    r = subprocess.run([TX] + list(args), cwd=cwd, env=env(), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SystemExit("tx %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r


def txj(*args):
    return json.loads(tx("--json", *args).stdout)


def ensure_store():
    d = store_dir()
    os.makedirs(d, exist_ok=True)
    if not os.path.exists(os.path.join(d, ".tx", "tx.db")):
        tx("init")
    # The bench programs read BENCH_* variables, and an agent gets only the worker's variables
    # that [worker] pass_env names (tx's default list: what agent CLIs need). The `worker`
    # subcommand (driver, bash) may have made the store first: it writes the same file.
    config = os.path.join(d, ".tx", "config.toml")
    if not os.path.exists(config):
        with open(config, "w") as f:
            f.write('[worker]\npass_env = ["PATH", "HOME", "BENCH_*"]\n')


def source_commit():
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(TX))))
    try:
        return subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "n/a"
    except Exception:
        return "n/a"


def serve():
    """Starts `tx serve` on a free loopback port; returns (process, port)."""
    p = subprocess.Popen([TX, "serve", "--http", "127.0.0.1:0"], cwd=store_dir(), env=env(),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        if "listening on http://127.0.0.1:" in line:
            return p, int(line.rsplit(":", 1)[1].strip().strip("/"))
    p.kill()
    raise SystemExit("tx serve did not start")


def stop_serve(p):
    try:
        os.kill(p.pid, signal.SIGTERM)
        p.wait(15)
    except subprocess.TimeoutExpired:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(5)
    except ProcessLookupError:
        pass


def timed_posts(bodies, what):
    """POSTs each of `bodies` (JSON text) to /api/tasks of a fresh `tx serve`, one keep-alive
    connection, one producer; returns the seconds the posts took (only they are timed)."""
    ensure_store()
    token = open(os.path.join(store_dir(), ".tx", "token")).read().strip()
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    p, port = serve()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", "/healthz")
        c.getresponse().read()
        t = time.perf_counter()
        for body in bodies:
            c.request("POST", "/api/tasks", body, headers)
            r = c.getresponse()
            data = r.read()
            if r.status != 201:
                raise SystemExit("POST /api/tasks%s: %d %s" % (what, r.status, data[:300]))
        dt = time.perf_counter() - t
        c.close()
    finally:
        stop_serve(p)
    return dt


def enqueue(kind, n):
    if kind not in COMMAND:
        sys.stderr.write("tx driver: kind %r: tx runs every task as a subprocess and has no in-process "
                         "no-op handler; its no-op drain is measured with bench/tx_drain outside the "
                         "driver contract (results/tx/)\n" % kind)
        sys.exit(2)
    body = json.dumps({"title": "bench-%s" % kind, "command": COMMAND[kind]})
    dt = timed_posts((body for _ in range(n)), "")
    out({"enqueue_s": dt, "mode": "single: POST /api/tasks x N to `tx serve`, one keep-alive "
                                  "connection, one producer"})


def enqueue_bulk(kind, n, chunk=1000):
    """POST /api/tasks with arrays of `chunk` tasks (one transaction each), as the peers' bulk
    adds go in chunks of 1000; one keep-alive connection, one producer; only the loop is timed."""
    task = {"title": "bench-%s" % kind, "command": COMMAND.get(kind, COMMAND["true"])}
    sizes = [min(chunk, n - i) for i in range(0, n, chunk)]
    dt = timed_posts((json.dumps([task] * k) for k in sizes), " [array]")
    out({"enqueue_s": dt, "mode": "bulk: POST /api/tasks with arrays of %d (one transaction each) to "
                                  "`tx serve`, one keep-alive connection, one producer" % chunk})


def counts(limit):
    by, max_attempt = {}, 0
    for t in txj("task", "list", "--limit", str(limit)):
        by[t["status"]] = by.get(t["status"], 0) + 1
        max_attempt = max(max_attempt, t.get("attempt") or 0)
    by["max_attempt"] = max_attempt
    return by


def orphan_state():
    res = {}
    tasks = txj("task", "list", "--limit", "10")
    workers = {w["id"]: w for w in txj("worker", "list")}
    if tasks:
        t = txj("task", "show", tasks[0]["id"])
        res["task"] = {"status": t["status"], "attempt": t["attempt"],
                       "attempts": [{"n": a["n"], "worker": workers.get(a["worker_id"], {}).get("name"),
                                     "status": a["status"], "end_reason": a.get("end_reason")}
                                    for a in t.get("attempts", [])]}
    res["workers"] = {}
    for w in workers.values():
        res["workers"][w["status"]] = res["workers"].get(w["status"], 0) + 1
    # the store's reconciler (a --workers 0 orchestrator started by `worker`): stop it now
    st = tx("--json", "orchestrator", "status", check=False)
    if st.returncode == 0 and '"status": "running"' in st.stdout:
        o = json.loads(st.stdout)
        res["reconciler"] = {"last_report": o.get("last_report")}
        r = tx("orchestrator", "stop", check=False)
        res["reconciler"]["stopped"] = r.returncode == 0
    out(res)


def describe(prof, workload):
    common = {"store": "SQLite file, WAL, synchronous=NORMAL (tx default), fresh per run",
              "task_command": {"true": "bench-done (one exec: appends the done record)",
                               "sleep": "bench-sleep (start record, sleep, done record)"},
              "lease": "30m (default)", "max_attempts": 3}
    if prof == "drain":
        d = {"unit": "tx orchestrator start --workers CONC (supervised pool: CONC `tx worker start` "
                     "children, one task at a time each; the orchestrator runs the reconciler)",
             "heartbeat_interval": "30s (default)", "poll_interval": "30s (default; wake-ups by the "
             "store's change watch)", "reconcile_interval": "60s (default)"}
    else:
        d = {"unit": "CONC hand-started `tx worker start --name NAME.i` under one waiting parent "
                     "(one session)",
             "reconciler": "tx orchestrator start --workers 0, started by the driver as the store's "
                           "service (only an orchestrator reconciles on SQLite; one per store); not "
                           "killed",
             "heartbeat_interval": "1s idle (dead after 2 s); busy it promises 0.5 s and beats every "
             "0.25 s (dead after 1 s)" if prof == "tight"
             else "30s idle (default; dead after 60 s); busy it promises 15 s and beats every 7.5 s "
             "(dead after 30 s)"}
    d.update(common)
    d["workload"] = workload
    out(d)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "versions":
        v = tx("--version", check=False).stdout.strip() if os.path.exists(TX) else "n/a"
        import sqlite3
        out({"tx": v, "git": source_commit(), "binary": TX,
             "sqlite (system libsqlite3)": sqlite3.sqlite_version})
    elif cmd == "describe":
        describe(args[0], args[1] if len(args) > 1 else "")
    elif cmd == "enqueue":
        enqueue(args[0], int(args[1]))
    elif cmd == "enqueue-bulk":
        enqueue_bulk(args[0], int(args[1]))
    elif cmd == "settled":
        n = int(args[0])
        out(counts(n + 100))
    elif cmd == "orphan-state":
        orphan_state()
    elif cmd == "post-kill":
        out({"action": "none", "note": "recovery is automatic: the store's reconciler "
                                       "(orchestrator --workers 0) declares stale workers dead"})
    else:
        raise SystemExit("unknown subcommand " + cmd)


main()
