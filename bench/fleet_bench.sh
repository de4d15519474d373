#!/usr/bin/env bash
# The largest heartbeating fleet one PostgreSQL server holds (issue 6: at a 1 s interval with
# < 50 % of one core for the server; target ≥ 5,000 workers). Builds tx_fleet_bench (Release) if
# needed, starts a throwaway PostgreSQL 15 server of its own (scripts/pg_server; durable: fsync and
# synchronous_commit on), and runs tx_fleet_bench for each fleet size in FLEETS, RUNS times (round
# by round: every size once, then again, so that a noisy spell spreads over the sizes). Each run
# is a fresh database on that server: N simulated workers registered, then heartbeating every
# INTERVAL over CONNECTIONS connections, measured for WINDOW s after WARMUP (see fleet_bench.cc).
# Prints a markdown table (medians of the runs, ± = half the min..max range over the median), the
# largest fleet that stayed under TARGET_PCT % of one core with every beat done and no worker stale,
# and a projection from the server's CPU per beat.
#
# With PROFILE=1, one more run at PROFILE_FLEET workers with pg_stat_statements loaded (the server
# is restarted with it; its overhead stays out of the table) prints the statements a heartbeat
# costs: calls and execution time per beat.
#
# BATCH_WINDOW=W (ms) records the beats due within W ms of one another in one transaction
# (WorkerService::HeartbeatMany), as `tx serve` records its remote workers' beats
# (api/heartbeat_batcher.h, 5 ms): with CONNECTIONS=1, one tx serve in front of the fleet.
#
# Environment: BUILD_DIR (default build/bench), FLEETS ("1000 2000 5000"), RUNS (3),
# CONNECTIONS (16), BATCH_WINDOW (0: a transaction per beat), INTERVAL (1s), WINDOW (30, seconds), WARMUP (10s), TARGET_PCT (50),
# PROFILE=1, PROFILE_FLEET (the first of FLEETS), WAIT_IDLE (e.g. 0.5: before each run, wait until
# the 1-minute load average is below it, at most WAIT_IDLE_MAX seconds, default 600), OUT_DIR (raw
# JSON lines; default a temp dir), TX_PG_FAST=1 (a non-durable server, not the real thing).
# Needs jq (and psql for PROFILE=1).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build/bench}
FLEETS=${FLEETS:-1000 2000 5000}
RUNS=${RUNS:-3}
CONNECTIONS=${CONNECTIONS:-16}
BATCH_WINDOW=${BATCH_WINDOW:-0}
INTERVAL=${INTERVAL:-1s}
WINDOW=${WINDOW:-30}
WARMUP=${WARMUP:-10s}
TARGET_PCT=${TARGET_PCT:-50}
PROFILE=${PROFILE:-0}
PROFILE_FLEET=${PROFILE_FLEET:-${FLEETS%% *}}
WAIT_IDLE=${WAIT_IDLE:-}
WAIT_IDLE_MAX=${WAIT_IDLE_MAX:-600}
OUT_DIR=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tx-fleet-bench-results-XXXXXX")}
mkdir -p "$OUT_DIR"
command -v jq >/dev/null || { echo "fleet_bench.sh needs jq" >&2; exit 1; }
if [ "$PROFILE" = 1 ]; then
  command -v psql >/dev/null || { echo "PROFILE=1 needs psql" >&2; exit 1; }
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTX_BUILD_BENCH=ON >&2
fi
ninja -C "$BUILD_DIR" tx_fleet_bench >&2
BENCH=$BUILD_DIR/bench/tx_fleet_bench

# The server: stopped and removed on exit.
PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/tx-fleet-pg-XXXXXX")
cleanup() { "$ROOT/scripts/pg_server" stop "$PG_DIR" >/dev/null 2>&1 || true; }
trap cleanup EXIT
PG_URL=$("$ROOT/scripts/pg_server" start "$PG_DIR" 2>"$OUT_DIR/pg_server.log") ||
  { cat "$OUT_DIR/pg_server.log" >&2; exit 1; }
PG_VERSION=$(grep -o 'PostgreSQL) [0-9.]*' "$OUT_DIR/pg_server.log" | head -n 1 | cut -d' ' -f2)
PG_HOME=$(cat "$PG_DIR/home" 2>/dev/null || echo "$PG_DIR")  # where data/ is
postmaster() { head -n 1 "$PG_HOME/data/postmaster.pid"; }

# settle: with WAIT_IDLE, wait (up to WAIT_IDLE_MAX s) for the 1-minute load to fall below it.
settle() {
  local waited=0
  if [ -n "$WAIT_IDLE" ]; then
    while awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v m="$WAIT_IDLE" 'BEGIN { exit !(l >= m) }' &&
      [ "$waited" -lt "$WAIT_IDLE_MAX" ]; do
      sleep 5
      waited=$((waited + 5))
    done
  fi
}

# fleet N: one run of N workers; its JSON line on stdout, its report on stderr.
fleet() {
  "$BENCH" --pg "$PG_URL" --server-pid "$(postmaster)" --workers "$1" \
    --connections "$CONNECTIONS" --interval "$INTERVAL" --seconds "$WINDOW" --warmup "$WARMUP" \
    --batch-window "$BATCH_WINDOW" \
    >"$OUT_DIR/last.out"
  grep -v '^JSON ' "$OUT_DIR/last.out" >&2
  sed -n 's/^JSON //p' "$OUT_DIR/last.out"
}

settle
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
if awk -v l="${load_at_start%% *}" 'BEGIN { exit !(l > 0.5) }'; then
  echo "warning: load average $load_at_start at start; the figures are only as good as the machine is idle" >&2
fi

for r in $(seq "$RUNS"); do
  for n in $FLEETS; do
    settle
    echo "fleet of $n, run $r/$RUNS (load $(cut -d' ' -f1 /proc/loadavg)) ..." >&2
    fleet "$n" >>"$OUT_DIR/fleet-$n.jsonl"
  done
done

# stats FILE JQ_EXPR: "median min max spread_pct" of a number taken from each JSON line.
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

echo "# tx: the heartbeating fleet one PostgreSQL server holds"
echo
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) · $(nproc) cpus · $(uname -sr) · PostgreSQL ${PG_VERSION:-?}$([ "${TX_PG_FAST:-0}" = 1 ] && echo ' (TX_PG_FAST=1: not durable)') · git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+dirty') · load average at start: $load_at_start"
echo
if [ "$BATCH_WINDOW" = 0 ]; then
  how="a transaction per beat (WorkerService::Heartbeat, as a worker's own heartbeat thread)"
else
  how="the beats due within $BATCH_WINDOW ms of one another in one transaction (WorkerService::HeartbeatMany, as tx serve records its remote workers' beats)"
fi
echo "Simulated workers registered on a fresh database, then each beating every $INTERVAL"
echo "(status idle + a worker's metadata), phases spread evenly, $how, over"
echo "$CONNECTIONS connections (threads of one client process, a Store each); measured for $WINDOW s"
echo "after a $WARMUP warm-up. Server CPU = utime + stime of all the cluster's processes (exited"
echo "ones through the postmaster's cutime/cstime), in % of one core; backends = our $CONNECTIONS"
echo "connections' share. Stale = live workers the store judges stale at the window's end"
echo "(now - last_heartbeat_at ≥ 2 × interval); gaps = workers the client saw go ≥ 2 intervals"
echo "without an accepted beat. Client and server share the machine's cores."
echo
echo "| workers | beats/s | median server CPU % | ± | runs | server µs/beat | of which backends | latency p50 / p99 ms | start lag p99 ms | failed | stale at end | gaps ≥ 2 intervals | client CPU % | load at start |"
echo "|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|---|---:|---|"
largest=
for n in $FLEETS; do
  f=$OUT_DIR/fleet-$n.jsonl
  [ -s "$f" ] || continue
  echo "| $n | $(fmt "$(median "$f" .beats_per_s)") | **$(fmt "$(median "$f" .server_cpu_pct)" 1)** | $(spread "$f" .server_cpu_pct) | $(runs "$f" .server_cpu_pct 1) | $(fmt "$(median "$f" .server_cpu_us_per_beat)") | $(fmt "$(median "$f" .backend_cpu_us_per_beat)") | $(fmt "$(median "$f" '.latency.p50_ms // 0')" 2) / $(fmt "$(median "$f" '.latency.p99_ms // 0')" 1) | $(fmt "$(median "$f" '.start_lag.p99_ms // 0')" 1) | $(runs "$f" .beats_failed) | $(runs "$f" .stale_at_end) | $(runs "$f" .workers_with_gap_over_2_intervals) | $(fmt "$(median "$f" .client_cpu_pct)" 1) | $(runs "$f" .load_at_start 2) |"
  # Held: median under the target, and in every run every beat done, none failed, none stale.
  if jq -se --argjson t "$TARGET_PCT" '
      (map(.server_cpu_pct) | sort | if length % 2 == 1 then .[(length - 1) / 2]
        else (.[length / 2 - 1] + .[length / 2]) / 2 end) < $t
      and all(.[]; .beats_failed == 0 and .stale_at_end == 0
        and .workers_with_gap_over_2_intervals == 0
        and .beats_ok >= 0.99 * .beats_expected)' "$f" >/dev/null; then
    largest=$n
  fi
done
echo
# The server's CPU per beat: the median over the runs that kept up (every beat done on time).
us=$(cat "$OUT_DIR"/fleet-*.jsonl | jq -s 'map(select(.beats_ok >= 0.99 * .beats_expected)
  | .server_cpu_us_per_beat) | sort | if length > 0 then .[length / 2 | floor] else 0 end')
interval_s=$(cat "$OUT_DIR"/fleet-*.jsonl | jq -s '.[0].interval_ms / 1000')
echo "**Largest fleet held under $TARGET_PCT % of one core: ${largest:-none of $FLEETS}** (every beat done, none failed, none stale, in every run)."
if awk -v us="$us" 'BEGIN { exit !(us > 0) }'; then
  echo "Projection from the median server CPU per beat over the runs that kept up ($(fmt "$us") µs): $(awk -v us="$us" -v t="$TARGET_PCT" -v i="$interval_s" 'BEGIN { printf "%.0f", t / 100 * 1e6 / us * i }') workers at $TARGET_PCT %; 5,000 workers would take $(awk -v us="$us" -v i="$interval_s" 'BEGIN { printf "%.0f", 5000 / i * us / 1e4 }') % of one core."
fi
echo

if [ "$PROFILE" = 1 ]; then
  echo "profile: restarting the server with pg_stat_statements; a run of $PROFILE_FLEET workers ..." >&2
  {
    echo "shared_preload_libraries = 'pg_stat_statements'"
    echo "pg_stat_statements.track_utility = on"
  } >>"$PG_HOME/data/postgresql.conf"
  "$ROOT/scripts/pg_server" restart "$PG_DIR" >/dev/null
  psql -q -X "$PG_URL" -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' \
    -c 'SELECT pg_stat_statements_reset()' >/dev/null
  fleet "$PROFILE_FLEET" >"$OUT_DIR/profile.jsonl"
  # A heartbeat's UPDATE is the only UPDATE of workers in the run: its calls = the beats.
  echo "## Statements of a heartbeat (pg_stat_statements, one run of $PROFILE_FLEET workers, warm-up and all)"
  echo
  echo "Execution time is the executor's wall time, not CPU; parse, bind, the protocol and the"
  echo "BEGIN and COMMIT (utility statements sent as prepared statements, which PostgreSQL 15's"
  echo "pg_stat_statements does not see — with the COMMIT's WAL flush) are outside it. Per beat = over"
  echo "the calls of the heartbeat's UPDATE (registrations insert; only a heartbeat updates a worker)."
  echo
  echo "| statement | calls per beat | exec µs per call | exec µs per beat | rows per call |"
  echo "|---|---:|---:|---:|---:|"
  psql -X -At -F $'\t' "$PG_URL" -c "
    WITH beats AS (SELECT sum(calls) AS n FROM pg_stat_statements
                   WHERE query LIKE 'UPDATE workers SET name%')
    SELECT left(regexp_replace(regexp_replace(regexp_replace(query, '\s+', ' ', 'g'),
                  '^SELECT .* FROM ', 'SELECT … FROM '), ' SET .* WHERE ', ' SET … WHERE '), 100),
           round(calls::numeric / beats.n, 2),
           round((total_exec_time * 1000 / calls)::numeric, 1),
           round((total_exec_time * 1000 / beats.n)::numeric, 1),
           round(rows::numeric / calls, 2)
    FROM pg_stat_statements, beats
    WHERE beats.n > 0 AND calls >= beats.n / 2
    ORDER BY total_exec_time DESC LIMIT 10" |
    while IFS=$'\t' read -r q c per tot rows; do
      echo "| \`${q//|/\\|}\` | $c | $per | $tot | $rows |"
    done
  echo
  echo "That run: $(jq -r '"\(.beats_per_s) beats/s, server CPU \(.server_cpu_pct) % (\(.server_cpu_us_per_beat) µs/beat) with pg_stat_statements loaded"' "$OUT_DIR/profile.jsonl")."
  echo
fi
echo "Raw outputs: $OUT_DIR"
