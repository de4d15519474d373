#!/usr/bin/env bash
# The HTTP API's benchmarks (issue 5). Builds tx and tx_http_bench (Release) if needed, then runs:
#   drain:       16 remote workers (HttpCoordinator, keep-alive) drain N=20000 no-op tasks through
#                a `tx serve` on a fresh store, ClaimNext → Report(done); RUNS=3 runs
#   drain-local: the same loop through 16 LocalCoordinators on a fresh store (the local path),
#                interleaved with the HTTP runs
#   heartbeats:  1000 remote workers heartbeating every 1 s through one `tx serve` for 60 s (after a
#                5 s warm-up): a connection per beat as `tx worker start --server` does; then one
#                keep-alive connection per worker with the default 256 server threads, and with
#                --http-threads $KA_HTTP_THREADS
# Each drain run is checked (every task done, each claimed once, no active claim) or the script
# stops. Prints markdown tables: medians of the runs, ± = half the min..max range over the median,
# the runs themselves, and the ratio HTTP / local.
#
# Environment: BUILD_DIR (default build/bench), TASKS (20000), WORKERS (16), RUNS (3),
# HB_WORKERS (1000), HB_INTERVAL (1s), HB_SECONDS (60), HB_WARMUP (5s), HB_CLIENT_THREADS (8),
# KA_HTTP_THREADS (1100), SKIP_DRAIN=1, SKIP_LOCAL=1, SKIP_HEARTBEATS=1, SKIP_KEEPALIVE=1,
# WAIT_IDLE (e.g. 0.5: before each run, wait until the 1-minute load average is below it, at most
# WAIT_IDLE_MAX seconds, default 600), OUT_DIR (raw JSON lines, each with the load at its start;
# default a temp dir). Needs jq.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build/bench}
TASKS=${TASKS:-20000}
WORKERS=${WORKERS:-16}
RUNS=${RUNS:-3}
HB_WORKERS=${HB_WORKERS:-1000}
HB_INTERVAL=${HB_INTERVAL:-1s}
HB_SECONDS=${HB_SECONDS:-60}
HB_WARMUP=${HB_WARMUP:-5s}
HB_CLIENT_THREADS=${HB_CLIENT_THREADS:-8}
KA_HTTP_THREADS=${KA_HTTP_THREADS:-1100}
WAIT_IDLE=${WAIT_IDLE:-}
WAIT_IDLE_MAX=${WAIT_IDLE_MAX:-600}
OUT_DIR=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tx-http-bench-results-XXXXXX")}
mkdir -p "$OUT_DIR"
command -v jq >/dev/null || { echo "http_bench.sh needs jq" >&2; exit 1; }

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTX_BUILD_BENCH=ON >&2
fi
ninja -C "$BUILD_DIR" tx tx_http_bench >&2
TX=$BUILD_DIR/tx
BENCH=$BUILD_DIR/bench/tx_http_bench

# The server under test and its store; removed on exit.
SERVER_PID=
STORE_DIR=
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}
cleanup() {
  stop_server
  [ -n "$STORE_DIR" ] && rm -rf "$STORE_DIR"
  return 0
}
trap cleanup EXIT

# fresh_store: a new temp dir with `tx init` done in it, as STORE_DIR (the previous one removed).
fresh_store() {
  [ -n "$STORE_DIR" ] && rm -rf "$STORE_DIR"
  STORE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/tx-http-bench-XXXXXX")
  (cd "$STORE_DIR" && "$TX" init >/dev/null)
}

# start_server [ARGS...]: `tx serve` on any free loopback port over STORE_DIR's store; sets URL,
# TOKEN and SERVER_PID.
start_server() {
  (cd "$STORE_DIR" && exec "$TX" serve --http 127.0.0.1:0 "$@" >"$STORE_DIR/serve.out" 2>&1) &
  SERVER_PID=$!
  URL=
  for _ in $(seq 100); do
    URL=$(sed -n 's/^listening on //p' "$STORE_DIR/serve.out" 2>/dev/null || true)
    [ -n "$URL" ] && break
    sleep 0.05
  done
  [ -n "$URL" ] || { echo "tx serve did not start:" >&2; cat "$STORE_DIR/serve.out" >&2; exit 1; }
  TOKEN=$(cat "$STORE_DIR/.tx/token")
}

# settle: with WAIT_IDLE, wait (up to WAIT_IDLE_MAX s) for the 1-minute load to fall below it.
# Sets LOAD to the 1-minute load as the run starts.
settle() {
  local waited=0
  if [ -n "$WAIT_IDLE" ]; then
    while awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v m="$WAIT_IDLE" 'BEGIN { exit !(l >= m) }' &&
      [ "$waited" -lt "$WAIT_IDLE_MAX" ]; do
      sleep 5
      waited=$((waited + 5))
    done
  fi
  LOAD=$(cut -d' ' -f1 /proc/loadavg)
}
# record FILE: appends the JSON line on stdin to FILE with the run's load at start, and echoes it.
record() { jq -c --argjson load "$LOAD" '. + {load_at_start: $load}' | tee -a "$1" >&2; }

settle
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
if awk -v l="${load_at_start%% *}" 'BEGIN { exit !(l > 0.5) }'; then
  echo "warning: load average $load_at_start at start; the figures are only as good as the machine is idle" >&2
fi

echo "# tx HTTP API benchmarks"
echo
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) · $(nproc) cpus · $(uname -sr) · git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+dirty') · load average at start: $load_at_start"
echo

# stats FILE JQ_EXPR: "median min max spread_pct runs" of a number taken from each JSON line.
stats() {
  jq -rs "map($2) | sort as \$v | (\$v | length) as \$n
    | (if \$n % 2 == 1 then \$v[(\$n - 1) / 2] else (\$v[\$n / 2 - 1] + \$v[\$n / 2]) / 2 end) as \$m
    | [\$m, \$v[0], \$v[-1], (if \$m > 0 then 100 * (\$v[-1] - \$v[0]) / 2 / \$m else 0 end)]
    | map(tostring) | join(\" \")" "$1"
}
# runs FILE JQ_EXPR [DECIMALS]: the values in run order, "a · b · c" (numbers rounded).
runs() {
  jq -rs --argjson d "${3:-0}" "map($2 | if type == \"number\" then (. * pow(10; \$d) | round) / pow(10; \$d) else . end | tostring) | join(\" · \")" "$1"
}
median() { stats "$1" "$2" | cut -d' ' -f1; }
fmt() { printf "%.${2:-0}f" "$1"; }  # fmt NUMBER [DECIMALS]
spread() { stats "$1" "$2" | awk '{ printf "±%.1f%%", $4 }'; }

HTTP_RUNS=$OUT_DIR/drain-http.jsonl
LOCAL_RUNS=$OUT_DIR/drain-local.jsonl
: >"$HTTP_RUNS"
: >"$LOCAL_RUNS"

if [ "${SKIP_DRAIN:-0}" != 1 ]; then
  for r in $(seq "$RUNS"); do
    fresh_store
    settle
    echo "drain over HTTP, run $r/$RUNS: $WORKERS workers, $TASKS tasks (load $LOAD) ..." >&2
    start_server
    "$BENCH" drain --workers "$WORKERS" --tasks "$TASKS" --server "$URL" --token "$TOKEN" \
      --db "$STORE_DIR/.tx/tx.db" --server-pid "$SERVER_PID" | record "$HTTP_RUNS"
    stop_server
    if [ "${SKIP_LOCAL:-0}" != 1 ]; then
      fresh_store
      settle
      echo "drain on the local path, run $r/$RUNS (load $LOAD) ..." >&2
      "$BENCH" drain-local --workers "$WORKERS" --tasks "$TASKS" --db "$STORE_DIR/.tx/tx.db" |
        record "$LOCAL_RUNS"
    fi
  done
  echo "## Drain: $WORKERS workers claim and complete $TASKS no-op tasks"
  echo
  echo "Each worker loops ClaimNext (wait 0) → Report(done), one task at a time, until a claim comes"
  echo "back empty; timed from all registered to the last completion. HTTP: $WORKERS threads of one"
  echo "process, each an HttpCoordinator with keep-alive (a remote worker's main loop), against one"
  echo "\`tx serve\` on the same machine (so client and server share the 2 cores). Local: the same loop"
  echo "and threads with a LocalCoordinator each (its own store connection). Every run checked: all"
  echo "tasks done, each claimed once, no active claim. Latencies: medians over the runs of each"
  echo "run's percentile; cpu = per task, the benchmark process (client) and the server process."
  echo
  echo "| path | median tasks/s | ± | runs | claim p50 / p99 ms | report p50 / p99 ms | client cpu µs/task | server cpu µs/task | load at start |"
  echo "|---|---:|---:|---|---:|---:|---:|---:|---|"
  row() {  # row LABEL FILE
    local f=$2
    [ -s "$f" ] || return 0
    local server='—'
    if jq -e 'has("server_cpu_us_per_task")' <(head -1 "$f") >/dev/null; then
      server=$(fmt "$(median "$f" .server_cpu_us_per_task)")
    fi
    echo "| $1 | **$(fmt "$(median "$f" .tasks_per_s)")** | $(spread "$f" .tasks_per_s) | $(runs "$f" .tasks_per_s) | $(fmt "$(median "$f" .claim.p50_ms)" 2) / $(fmt "$(median "$f" .claim.p99_ms)" 2) | $(fmt "$(median "$f" .report.p50_ms)" 2) / $(fmt "$(median "$f" .report.p99_ms)" 2) | $(fmt "$(median "$f" .client_cpu_us_per_task)") | $server | $(runs "$f" .load_at_start 2) |"
  }
  row "HTTP: $WORKERS remote workers (HttpCoordinator, keep-alive) → \`tx serve\`" "$HTTP_RUNS"
  row "local: $WORKERS LocalCoordinators (threads, a connection each)" "$LOCAL_RUNS"
  echo
  if [ -s "$HTTP_RUNS" ] && [ -s "$LOCAL_RUNS" ]; then
    hm=$(median "$HTTP_RUNS" .tasks_per_s)
    lm=$(median "$LOCAL_RUNS" .tasks_per_s)
    paired=$(paste -d' ' <(jq -r .tasks_per_s "$HTTP_RUNS") <(jq -r .tasks_per_s "$LOCAL_RUNS") |
      awk 'NR == 1 { lo = hi = $1 / $2 } { r = $1 / $2; if (r < lo) lo = r; if (r > hi) hi = r }
           END { printf "%.2f..%.2f", lo, hi }')
    echo "**HTTP / local = $(awk -v h="$hm" -v l="$lm" 'BEGIN { printf "%.2f", h / l }')×** (medians $(fmt "$hm") / $(fmt "$lm") tasks/s; run by run $paired)."
    echo
  fi
fi

# heartbeat_runs LABEL FILE [SERVER ARGS...]: RUNS runs of the heartbeat mode, each on a fresh
# store and server; the bench's own flags come from HB_ARGS.
heartbeat_runs() {
  local label=$1 file=$2
  shift 2
  : >"$file"
  for r in $(seq "$RUNS"); do
    fresh_store
    settle
    echo "heartbeats ($label), run $r/$RUNS: $HB_WORKERS workers every $HB_INTERVAL for ${HB_SECONDS}s (load $LOAD) ..." >&2
    start_server "$@"
    "$BENCH" heartbeats --workers "$HB_WORKERS" --interval "$HB_INTERVAL" --seconds "$HB_SECONDS" \
      --warmup "$HB_WARMUP" --server "$URL" --token "$TOKEN" --server-pid "$SERVER_PID" \
      "${HB_ARGS[@]}" | record "$file"
    stop_server
  done
}

if [ "${SKIP_HEARTBEATS:-0}" != 1 ]; then
  HB_ARGS=(--client-threads "$HB_CLIENT_THREADS")
  heartbeat_runs "a connection per beat" "$OUT_DIR/heartbeats.jsonl"
  if [ "${SKIP_KEEPALIVE:-0}" != 1 ]; then
    HB_ARGS=(--keep-alive)
    heartbeat_runs "keep-alive, 256 server threads" "$OUT_DIR/heartbeats-keepalive.jsonl"
    heartbeat_runs "keep-alive, $KA_HTTP_THREADS server threads" \
      "$OUT_DIR/heartbeats-keepalive-$KA_HTTP_THREADS.jsonl" --http-threads "$KA_HTTP_THREADS"
  fi

  echo "## Heartbeats: $HB_WORKERS remote workers beating every $HB_INTERVAL (one \`tx serve\`, ${HB_SECONDS} s measured)"
  echo
  echo "Each worker registered over HTTP, then beats with the metadata a worker sends, phases spread"
  echo "evenly over the interval, through an HttpCoordinator of its own. Server CPU = utime + stime of"
  echo "the \`tx serve\` process over the measured window, in % of one core (target < 25 %). Gap = a"
  echo "worker's longest time between two accepted beats; ≥ 2 intervals is what makes a worker stale"
  echo "(the reconciler would declare it dead). Latency and failures are per beat; the client's CPU is"
  echo "the load generator's own, on the same machine. Failed and hung, gaps and dropped SYNs are per"
  echo "run (\"failed+hung\"); a dropped SYN (the system's TcpExt ListenOverflows over the window) is"
  echo "sent again after a second."
  echo
  echo "| connections | server threads | median server CPU % | ± | runs | beats ok / s | failed · hung ≥ 2 intervals at the end | latency p50 / p99 ms | workers with a gap ≥ 2 intervals | SYNs dropped (accept queue full) | client CPU % | load at start |"
  echo "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"
  hb_row() {  # hb_row LABEL THREADS FILE
    local f=$3
    [ -s "$f" ] || return 0
    echo "| $1 | $2 | **$(fmt "$(median "$f" .server_cpu_pct)" 1)** | $(spread "$f" .server_cpu_pct) | $(runs "$f" .server_cpu_pct 1) | $(fmt "$(median "$f" .beats_per_s)") | $(runs "$f" '"\(.beats_failed)+\(.beats_hung_at_end)"') | $(fmt "$(median "$f" '.latency.p50_ms // 0')" 2) / $(fmt "$(median "$f" '.latency.p99_ms // 0')" 1) | $(runs "$f" .workers_with_gap_over_2_intervals) | $(runs "$f" .listen_overflows) | $(fmt "$(median "$f" .client_cpu_pct)" 1) | $(runs "$f" .load_at_start 2) |"
  }
  hb_row "a new connection per beat (\`tx worker start --server\`), $HB_CLIENT_THREADS client threads" 256 "$OUT_DIR/heartbeats.jsonl"
  hb_row "keep-alive, one per worker (a client thread each)" 256 "$OUT_DIR/heartbeats-keepalive.jsonl"
  hb_row "keep-alive, one per worker (a client thread each)" "$KA_HTTP_THREADS" "$OUT_DIR/heartbeats-keepalive-$KA_HTTP_THREADS.jsonl"
  echo
  f=$OUT_DIR/heartbeats.jsonl
  if [ -s "$f" ]; then
    echo "Registration of the $HB_WORKERS workers over HTTP (a connection each, one at a time): p50 $(fmt "$(median "$f" .register.p50_ms)" 2) ms, p99 $(fmt "$(median "$f" .register.p99_ms)" 2) ms (medians of the runs)."
    echo
  fi
  for f in "$OUT_DIR"/heartbeats*.jsonl; do
    errs=$(jq -rs 'map(.errors | to_entries[]) | group_by(.key) | map("\(.[0].key): \(map(.value) | add)") | join("; ")' "$f")
    [ -n "$errs" ] && echo "Errors in $(basename "$f" .jsonl) (all runs): $errs."
  done
  echo
fi
echo "Raw outputs: $OUT_DIR"
