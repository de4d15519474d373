#!/usr/bin/env bash
# Issue 27's bulk target, beside pg-boss and graphile-worker in one interleaved pass: the peers'
# enqueue-bulk workload (N=10000 in chunks of 1,000 through each one's bulk API; tx: POST
# /api/tasks with arrays of 1,000 to `tx serve`, one transaction each). Prints one line per run
# and the medians with the spread.
#   bench/peers/bulk_pass.sh PEERS_DIR TX [OTHER_TX] [REPS]
# PEERS_DIR: a copy of ../shared/peers (npm install done; PostgreSQL 15 for the peers), with this
# project's bench/peers/tx_driver{,.py} as its systems/tx/driver{,.py}.
# OTHER_TX: another tx build to interleave (a before/after). REPS: rounds (5).
set -uo pipefail
source "$(dirname "$(realpath "$0")")/pass_lib.sh"
peers=$1 tx=$(realpath "$2") other=${3:+$(realpath "$3")} reps=${4:-5}
cd "$peers" || exit 1
out=$(mktemp)
for ((r = 1; r <= reps; r++)); do
  for sys in tx pgboss graphile ${other:+other}; do
    pass_record "$out" "round $r" "$sys" enqueue_bulk_per_s "$(pass_run "$sys" enqueue-bulk)"
  done
done
pass_summary "$out" tasks/s
rm -f "$out"
