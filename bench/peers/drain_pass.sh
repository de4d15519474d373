#!/usr/bin/env bash
# Issue 27's drain-process target, beside pg-boss and raw fork/exec in one interleaved pass: each
# round runs `xargs -P4 -n1 /bin/true` over N, then the peers' drain-process workload (N tasks,
# each one exec of a tiny program, 4 workers) on tx and pg-boss. Prints one line per run and the
# medians with the spread.
#   bench/peers/drain_pass.sh PEERS_DIR TX [OTHER_TX] [REPS] [N]
# PEERS_DIR: a copy of ../shared/peers (npm install done; PostgreSQL 15 for pg-boss), with this
# project's bench/peers/tx_driver{,.py} as its systems/tx/driver{,.py}.
# OTHER_TX: another tx build to interleave (a before/after). REPS: rounds (5). N: tasks (2000).
set -uo pipefail
source "$(dirname "$(realpath "$0")")/pass_lib.sh"
peers=$1 tx=$(realpath "$2") other=${3:+$(realpath "$3")} reps=${4:-5} n=${5:-2000}
cd "$peers" || exit 1
out=$(mktemp)
for ((r = 1; r <= reps; r++)); do
  start=$(date +%s.%N)
  seq "$n" | xargs -P4 -n1 /bin/true
  rate=$(python3 -c "import sys; print($n / ($(date +%s.%N) - $start))")
  pass_record "$out" "round $r" xargs jobs_per_s "{\"jobs_per_s\": $rate}"
  for sys in tx pgboss ${other:+other}; do
    pass_record "$out" "round $r" "$sys" jobs_per_s "$(pass_run "$sys" drain-process --n "$n")"
  done
done
pass_summary "$out" jobs/s
rm -f "$out"
