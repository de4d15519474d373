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
source "$(dirname "$(realpath "$0")")/pass_lib.sh"
peers=$1 tx=$(realpath "$2") other=${3:+$(realpath "$3")} reps=${4:-5}
cd "$peers" || exit 1
out=$(mktemp)
for ((r = 1; r <= reps; r++)); do
  for sys in tx bullmq ${other:+other}; do
    pass_record "$out" "round $r" "$sys" enqueue_per_s "$(pass_run "$sys" drain-process)"
  done
done
pass_summary "$out" adds/s
rm -f "$out"
