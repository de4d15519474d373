#!/usr/bin/env bash
# Issue 27's recovery target, beside BullMQ in one interleaved pass: the peers' orphan-recovery
# test with the tight profiles (tx --heartbeat-interval 1s; BullMQ a 1 s lock), the kill at ten
# phases 5.0, 5.1, ... 5.9 s after the job started, so that it falls at every point between two
# beats and two lock renewals. Prints one line per run and the medians.
#   bench/peers/orphan_pass.sh PEERS_DIR TX [OTHER_TX]
# PEERS_DIR: a copy of ../shared/peers (npm install done; Debian's redis-server for BullMQ).
# OTHER_TX: another tx build to interleave (a before/after).
set -uo pipefail
peers=$1 tx=$(realpath "$2") other=${3:+$(realpath "$3")}
cd "$peers" || exit 1
out=$(mktemp)
for age in 5.00 5.10 5.20 5.30 5.40 5.50 5.60 5.70 5.80 5.90; do
  for sys in tx bullmq ${other:+other}; do
    case $sys in
      tx) r=$(BENCH_KILL_AGE_S=$age BENCH_TX_BIN=$tx ./run.sh tx orphan-recovery --profile tight --timeout 60 2>/dev/null | tail -1) ;;
      other) r=$(BENCH_KILL_AGE_S=$age BENCH_TX_BIN=$other ./run.sh tx orphan-recovery --profile tight --timeout 60 2>/dev/null | tail -1) ;;
      *) r=$(BENCH_KILL_AGE_S=$age ./run.sh "$sys" orphan-recovery --profile tight --timeout 60 2>/dev/null | tail -1) ;;
    esac
    s=$(echo "$r" | python3 -c 'import json, sys; print(json.loads(sys.stdin.read()).get("recovery_s"))' 2>/dev/null)
    echo "kill at ${age}s $sys ${s:-failed: ${r: -200}}" | tee -a "$out"
  done
done
python3 - "$out" <<'PYEOF'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    try:
        runs[f[3]].append(float(f[4]))
    except ValueError:
        pass
for sys_, v in runs.items():
    print(f"{sys_}: p50 {statistics.median(v):.2f} s, min {min(v):.2f} s, max {max(v):.2f} s ({len(v)} kills)")
PYEOF
rm -f "$out"
