#!/usr/bin/env bash
# Issue 27's recovery target, beside BullMQ in one interleaved pass: the peers' orphan-recovery
# test with the tight profiles (tx --heartbeat-interval 1s; BullMQ a 1 s lock), the kill at ten
# phases 5.0, 5.1, ... 5.9 s after the job started, so that it falls at every point between two
# beats and two lock renewals. Prints one line per run and the medians.
#   bench/peers/orphan_pass.sh PEERS_DIR TX [OTHER_TX]
# PEERS_DIR: a copy of ../shared/peers (npm install done; Debian's redis-server for BullMQ).
# OTHER_TX: another tx build to interleave (a before/after).
set -uo pipefail
source "$(dirname "$(realpath "$0")")/pass_lib.sh"
peers=$1 tx=$(realpath "$2") other=${3:+$(realpath "$3")}
cd "$peers" || exit 1
out=$(mktemp)
for age in 5.00 5.10 5.20 5.30 5.40 5.50 5.60 5.70 5.80 5.90; do
  for sys in tx bullmq ${other:+other}; do
    r=$(BENCH_KILL_AGE_S=$age pass_run "$sys" orphan-recovery --profile tight --timeout 60)
    pass_record "$out" "kill at ${age}s" "$sys" recovery_s "$r"
  done
done
pass_summary "$out" s
rm -f "$out"
