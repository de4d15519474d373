#!/usr/bin/env bash
# The benchmark suite the README quotes. Builds the benchmarks (Release) if needed, then runs:
#   drain: 4 claimer processes, N=20000 no-op tasks, synchronous=NORMAL, 3 runs
#          the same with 1 and with 8 claimers; synchronous=FULL with 4 claimers; and 4 claimers
#          reporting and claiming in one transaction (--combined)
#   micro: claim / claim+complete / renew / heartbeat latencies, and claim+complete at queue
#          depths 1k / 100k / 1M (3 repetitions, medians)
# and prints markdown tables (medians of the runs, ± = half the min..max range over the median).
#
# Environment: BUILD_DIR (default build/bench), TASKS (20000), RUNS (3), REPS (3, micro
# repetitions), SKIP_DRAIN=1, SKIP_MICRO=1, SKIP_DEPTH=1 (skip the 1M-task seeding, ~20 s),
# OUT_DIR (raw outputs; default a temp dir).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build/bench}
TASKS=${TASKS:-20000}
RUNS=${RUNS:-3}
REPS=${REPS:-3}
OUT_DIR=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tx-bench-results-XXXXXX")}
mkdir -p "$OUT_DIR"

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTX_BUILD_BENCH=ON >&2
fi
ninja -C "$BUILD_DIR" tx_drain tx_micro_bench >&2
DRAIN=$BUILD_DIR/bench/tx_drain
MICRO=$BUILD_DIR/bench/tx_micro_bench

load1=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load1" 'BEGIN { exit !(l > 1.0) }'; then
  echo "warning: load average $load1 at start; the figures are only as good as the machine is idle" >&2
fi

echo "# tx benchmarks"
echo
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) · $(nproc) cpus · $(uname -sr) · git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+dirty') · load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# json_field JSON KEY: the value of a top-level scalar field of our one-line JSON.
json_field() { sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" <<<"$1"; }
json_runs() { sed -n 's/.*"runs":\[\([^]]*\)\].*/\1/p' <<<"$1" | tr ',' '\n' | awk '{printf "%s%.0f", (NR>1?", ":""), $1}'; }

rows=()
drain() {  # drain CLAIMERS SYNC [--combined]
  local k=$1 sync=$2 extra=${3:-} loop="ClaimNext → Report"
  local log="$OUT_DIR/drain-k$1-$2${3:+-combined}.txt"
  [ -n "$extra" ] && loop="ReportAndClaimNext"
  echo "drain: $k claimers, $TASKS tasks, sync $sync, $loop, $RUNS runs ..." >&2
  "$DRAIN" --claimers "$k" --tasks "$TASKS" --runs "$RUNS" --sync "$sync" $extra | tee "$log" >&2
  local j; j=$(sed -n 's/^JSON //p' "$log")
  rows+=("| $k | $sync | $loop | $TASKS | **$(printf '%.0f' "$(json_field "$j" median)")** | ±$(json_field "$j" spread_pct)% | $(json_runs "$j") | $(printf '%.0f' "$(json_field "$j" after_ready_median)") | $(printf '%.0f' "$(json_field "$j" cpu_us_per_task)") |")
}

if [ "${SKIP_DRAIN:-0}" != 1 ]; then
  drain 4 NORMAL
  drain 1 NORMAL
  drain 8 NORMAL
  drain 4 FULL
  drain 4 NORMAL --combined

  echo "## Drain: claim + complete cycles per second (\`tx_drain\`)"
  echo
  echo "K claimer processes (forked, each opens the store and registers a worker), each claiming and"
  echo "completing one no-op task at a time until the queue is empty; timed from the first fork to"
  echo "the last exit. Loop \"ClaimNext → Report\" is two transactions per task; \"ReportAndClaimNext\""
  echo "is one. ± = half the min..max range over the median; after-ready = from the first claimer"
  echo "registered to the last completion; cpu = user + system time of all claimers per task."
  echo
  echo "| claimers | synchronous | loop | tasks | median tasks/s | ± | runs | after-ready median | cpu µs/task |"
  echo "|---:|---|---|---:|---:|---:|---|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
fi

if [ "${SKIP_MICRO:-0}" != 1 ]; then
  filter='BM_(Claim|ClaimComplete|Renew|Heartbeat)/'
  [ "${SKIP_DEPTH:-0}" != 1 ] && filter='BM_(Claim|ClaimComplete|Renew|Heartbeat|ClaimCompleteDepth)/'
  echo "micro: $filter, $REPS repetitions ..." >&2
  "$MICRO" --benchmark_filter="$filter" --benchmark_repetitions="$REPS" \
    --benchmark_report_aggregates_only=true --benchmark_out="$OUT_DIR/micro.csv" \
    --benchmark_out_format=csv >&2
  echo "## Micro-benchmarks (\`tx_micro_bench\`, one connection, synchronous=NORMAL, medians of $REPS)"
  echo
  echo "BM_ClaimComplete is ClaimNext then Report(done), WAL checkpoints included. BM_ClaimCompleteDepth/Q"
  echo "is the same with Q ready tasks queued, refilled and checkpointed outside the timed region, so"
  echo "it times the claim path alone; flat means within 20% from 1k to 1M."
  echo
  echo "| benchmark | µs/op (wall) | µs/op (cpu) | ops/s | vs depth 1k |"
  echo "|---|---:|---:|---:|---:|"
  # CSV: name,iterations,real_time,cpu_time,time_unit,bytes_per_second,items_per_second,...
  agg='_median'
  [ "$REPS" = 1 ] && agg=''
  awk -F, -v agg="$agg" '
    $1 ~ ("^\"BM_.*/real_time" agg "\"$") {
      name = $1; gsub(/"/, "", name); sub("/real_time" agg "$", "", name)
      real = $3; cpu = $4; unit = $5; gsub(/"/, "", unit)
      if (unit == "ns") { real /= 1000; cpu /= 1000 } else if (unit == "ms") { real *= 1000; cpu *= 1000 }
      rel = ""
      if (name ~ /^BM_ClaimCompleteDepth\//) {
        if (base == "") base = real
        rel = sprintf("%+.0f%%", 100 * (real - base) / base)
      }
      printf "| %s | %.1f | %.1f | %.0f | %s |\n", name, real, cpu, 1e6 / real, rel
    }' "$OUT_DIR/micro.csv"
  echo
fi
echo "Raw outputs: $OUT_DIR"
