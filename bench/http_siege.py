#!/usr/bin/env python3
"""How the HTTP API answers under a siege (issue 23's target: /healthz and the worker protocol
under 100 ms p99 with 1,000 hostile connections).

A real `tx orchestrator start --workers 0 --http` serves a store of its own. The siege: --idle
connections that send nothing, --slow ones that send a header byte every 0.8 s (slowloris; opened
again when the server closes them) and --streams event streams that are never read. Beside it, a
probe sends GET /healthz on a new connection and a worker's heartbeat (POST /api/worker/heartbeat
with its credential) on a kept-alive one, each every 50 ms for --seconds. Per run: the p50 and p99
of each; over --runs, the median with the spread (half the min..max range over the median).

  python3 bench/http_siege.py --tx build/release/tx [--idle 400 --slow 400 --streams 200]
"""
import argparse
import http.client
import json
import os
import resource
import socket
import statistics
import subprocess
import tempfile
import threading
import time


def percentile(values, p):
    if not values:
        return float("inf")  # nothing answered
    values = sorted(values)
    return values[min(len(values) - 1, len(values) * p // 100)]


def spread(values):
    m = statistics.median(values)
    if m in (0, float("inf")):
        return 0.0
    return 100.0 * (max(values) - min(values)) / 2 / m


def connect(port):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s


def run_once(args):
    d = tempfile.mkdtemp(prefix="tx-siege-")
    tx = os.path.abspath(args.tx)
    subprocess.run([tx, "init"], cwd=d, check=True, capture_output=True)
    with open(os.path.join(d, ".tx", "tokens"), "w") as f:
        f.write("worker w-secret\n")
    orch = subprocess.Popen([tx, "orchestrator", "start", "--workers", "0", "--http",
                             "127.0.0.1:0"], cwd=d, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        port = None
        for _ in range(200):
            r = subprocess.run([tx, "--json", "orchestrator", "status"], cwd=d,
                               capture_output=True, text=True)
            if r.returncode == 0:
                url = json.loads(r.stdout).get("config", {}).get("http", "")
                if url:
                    port = int(url.rsplit(":", 1)[1])
                    break
            time.sleep(0.05)
        assert port, "the server did not start"

        beat = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = {"Authorization": "Bearer w-secret", "Content-Type": "application/json"}
        beat.request("POST", "/api/worker/register",
                     json.dumps({"name": "probe", "heartbeat_interval_ms": 60000}), headers)
        reg = json.loads(beat.getresponse().read())
        headers["X-Tx-Worker-Credential"] = reg["credential"]
        wid = reg["worker"]["id"]

        idle = [connect(port) for _ in range(args.idle)]
        slow = [connect(port) for _ in range(args.slow)]
        streams = [connect(port) for _ in range(args.streams)]
        time.sleep(0.2)
        head = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n"
        for s in slow:
            try:
                s.send(head)
            except OSError:
                pass
        for s in streams:
            try:
                s.send(b"GET /api/events HTTP/1.1\r\nHost: localhost\r\n"
                       b"Accept: text/event-stream\r\n\r\n")
            except OSError:
                pass
        besieging = True

        def slowloris():
            while besieging:
                for i, s in enumerate(slow):
                    try:
                        s.send(b"X")
                    except BlockingIOError:
                        pass
                    except OSError:
                        s.close()
                        slow[i] = connect(port)
                        try:
                            slow[i].send(head)
                        except OSError:
                            pass
                time.sleep(0.8)

        t = threading.Thread(target=slowloris)
        t.start()
        healthz, beats, failed = [], [], 0
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            t0 = time.monotonic()
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                c.request("GET", "/healthz")
                ok = c.getresponse().status == 200
                c.close()
            except OSError:
                ok = False
            if ok:
                healthz.append((time.monotonic() - t0) * 1000)
            else:
                failed += 1
            t0 = time.monotonic()
            try:
                beat.request("POST", "/api/worker/heartbeat", json.dumps({"worker_id": wid}),
                             headers)
                ok = beat.getresponse().read() and True
            except (OSError, http.client.HTTPException):
                beat = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                ok = False
            if ok:
                beats.append((time.monotonic() - t0) * 1000)
            else:
                failed += 1
            time.sleep(0.05)
        besieging = False
        t.join()
        for s in idle + slow + streams:
            s.close()
        return {"healthz_p50": percentile(healthz, 50), "healthz_p99": percentile(healthz, 99),
                "beat_p50": percentile(beats, 50), "beat_p99": percentile(beats, 99),
                "probes": len(healthz) + len(beats), "failed": failed}
    finally:
        orch.terminate()
        orch.wait(timeout=60)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tx", default="build/release/tx")
    p.add_argument("--idle", type=int, default=400)
    p.add_argument("--slow", type=int, default=400)
    p.add_argument("--streams", type=int, default=200)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    runs = [run_once(args) for _ in range(args.runs)]
    print("%d hostile connections (%d idle, %d slow, %d streams), %d runs of %g s" %
          (args.idle + args.slow + args.streams, args.idle, args.slow, args.streams, args.runs,
           args.seconds))
    for key in ("healthz_p50", "healthz_p99", "beat_p50", "beat_p99"):
        values = [r[key] for r in runs]
        print("  %-12s median %7.2f ms  ±%4.0f %%  (runs: %s)" %
              (key, statistics.median(values), spread(values),
               ", ".join("%.2f" % v for v in values)))
    print("  failed probes: %s" % [r["failed"] for r in runs])


if __name__ == "__main__":
    main()
