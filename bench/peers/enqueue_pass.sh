#!/usr/bin/env bash
# Issue 27's single-add target, beside BullMQ in one interleaved pass: the peers' drain-process
# workload (N=2000), whose "enqueue/s single" is N sequential adds by one producer (tx: POST
# /api/tasks to `tx serve` over one keep-alive connection; BullMQ: queue.add to Redis), timed
# before the drain. Prints one line per run and the medians with the spread.
#   bench/peers/enqueue_pass.sh PEERS_DIR TX [OTHER_TX] [REPS]
# PEERS_DIR: a copy of ../shared/peers (npm install done; Debian's redis-server for BullMQ), with
# this project's bench/peers/tx_driver{,.py} as its systems/tx/driver{,.py}.
# OTHER_TX: another tx build to interleave (a before/after). REPS: rounds (5).
set -uo pipefail
peers=$1 tx=$(realpath "$2") other=${3:+$(realpath "$3")} reps=${4:-5}
cd "$peers" || exit 1
out=$(mktemp)
for ((r = 1; r <= reps; r++)); do
  for sys in tx bullmq ${other:+other}; do
    case $sys in
      tx) res=$(BENCH_TX_BIN=$tx ./run.sh tx drain-process 2>/dev/null | tail -1) ;;
      other) res=$(BENCH_TX_BIN=$other ./run.sh tx drain-process 2>/dev/null | tail -1) ;;
      *) res=$(./run.sh "$sys" drain-process 2>/dev/null | tail -1) ;;
    esac
    s=$(echo "$res" | python3 -c 'import json, sys; print(round(json.loads(sys.stdin.read())["enqueue_per_s"]))' 2>/dev/null)
    echo "round $r $sys ${s:-failed: ${res: -200}}" | tee -a "$out"
  done
done
python3 - "$out" <<'PYEOF'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    try:
        runs[f[2]].append(float(f[3]))
    except ValueError:
        pass
for sys_, v in runs.items():
    print(f"{sys_}: median {statistics.median(v):.0f} adds/s, min {min(v):.0f}, max {max(v):.0f} ({len(v)} runs)")
if "tx" in runs and "bullmq" in runs:
    print(f"tx / bullmq: {statistics.median(runs['tx']) / statistics.median(runs['bullmq']):.2f}")
PYEOF
rm -f "$out"
