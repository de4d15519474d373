# Sourced by the *_pass.sh scripts (run from inside the peers' directory, $tx and $other set): one
# harness run of a system, its figure shown and recorded, and the medians of what was recorded.

# pass_run SYS WORKLOAD ARGS...: one run of `tx` (the build $tx), `other` (the build $other) or a
# peer; prints the run's JSON line.
pass_run() {
  local sys=$1
  shift
  case $sys in
    tx) BENCH_TX_BIN=$tx ./run.sh tx "$@" ;;
    other) BENCH_TX_BIN=$other ./run.sh tx "$@" ;;
    *) ./run.sh "$sys" "$@" ;;
  esac 2>/dev/null | tail -1
}

# pass_record FILE LABEL SYS KEY JSON: shows "LABEL SYS VALUE" (or the run's end when KEY is
# missing) and records "SYS VALUE" in FILE.
pass_record() {
  local file=$1 label=$2 sys=$3 key=$4 json=$5 v
  v=$(python3 -c 'import json, sys; v = json.loads(sys.stdin.read()).get(sys.argv[1]); print("" if v is None else round(v, 3))' "$key" <<< "$json" 2>/dev/null)
  echo "$label $sys ${v:-failed: ${json: -200}}"
  [ -n "$v" ] && echo "$sys $v" >> "$file"
}

# pass_summary FILE UNIT: per system the median, min and max of what FILE records, then tx's
# median over BullMQ's when both ran.
pass_summary() {
  python3 - "$1" "$2" <<'PYEOF'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, value = line.split()
    runs[name].append(float(value))
unit = sys.argv[2]
def fmt(x):
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.2f}"
for name, v in runs.items():
    print(f"{name}: median {fmt(statistics.median(v))} {unit}, min {fmt(min(v))}, max {fmt(max(v))} ({len(v)} runs)")
for peer in ("bullmq", "pgboss", "graphile"):
    if "tx" in runs and peer in runs:
        print(f"tx / {peer}: {statistics.median(runs['tx']) / statistics.median(runs[peer]):.2f}")
PYEOF
}
