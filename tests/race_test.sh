#!/usr/bin/env bash
# Claim race: 8 processes drain 2,000 tasks through the real tx binary on one store: SQLite, or
# with TX_SHELL_BACKEND=postgres a fresh PostgreSQL database (shell_lib.sh: use_store).
#
#   bash tests/race_test.sh /path/to/tx
#
# Each process loops `tx claim --next --worker race-K --json` → `tx task done ID --token N` until
# claim exits 3 (nothing eligible). Any other exit code is a failure — above all 1 with "store
# busy", which would mean a writer was not serialised (SQLite: BEGIN IMMEDIATE + the busy
# handler; PostgreSQL: row locks, SKIP LOCKED, deadlocks run again).
# Afterwards, through `tx --json` only (no sqlite3 CLI): every task is done with exactly one
# attempt, completed; exactly one task.claimed and one task.done event per task; no task was
# claimed twice; no stderr mentions "busy"; every process finished cleanly.
#
# Knobs (environment): TX_RACE_TASKS (2000), TX_RACE_PROCS (8), TX_RACE_ADDERS (4),
# TX_RACE_DEADLINE seconds for the drain (240), TX_RACE_KEEP=1 keeps the scratch directory.
# Prints "N passed, M failed" last and exits non-zero on any failure.

set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shell_lib.sh"

if [[ $# -lt 1 ]]; then
  echo "usage: $0 /path/to/tx" >&2
  exit 2
fi
TX=$(realpath "$1")
[[ -x $TX ]] || { echo "race_test: $TX is not executable" >&2; exit 2; }
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

TASKS=${TX_RACE_TASKS:-2000}
PROCS=${TX_RACE_PROCS:-8}
ADDERS=${TX_RACE_ADDERS:-4}
DEADLINE=${TX_RACE_DEADLINE:-240}   # seconds the drain may take before the loops give up
CMD_TIMEOUT=30                      # seconds any single tx invocation may take

# Nothing from the caller's environment may steer tx.
unset TX_DB TX_CLAIM_TOKEN TX_ALLOWED_COMMANDS TX_SYNCHRONOUS TX_TASK_ID TX_WORKER_ID TX_ATTEMPT

WORK=$(mktemp -d /tmp/tx-race-XXXXXX)
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  drop_store
  if [[ ${TX_RACE_KEEP:-0} == 1 ]]; then
    echo "race_test: kept $WORK" >&2
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
cd "$WORK"

t0=$(now_ms)
use_store
tx init >/dev/null

# ---- 1. add the tasks (ADDERS parallel loops: one loop takes ~25-55 s on a 2-core box) ----------

race_add() { tx task add "race task $1"; }
add_tasks "$TASKS" "$ADDERS" race_add

# ---- 2. race: PROCS claim/done loops ------------------------------------------------------------

# One claimer. Files: claimer-K.claims ("ID TOKEN" per claim), claimer-K.done (IDs completed),
# claimer-K.fail (one line per unexpected exit), claimer-K.err (all stderr of its tx calls).
claimer() {
  local k=$1 out rc id token end=$((SECONDS + DEADLINE)) failures=0
  local re_id='"task_id": "(task-[a-z0-9]+)"' re_token='"token": ([0-9]+)'
  : >"claimer-$k.claims"
  : >"claimer-$k.done"
  while :; do
    if ((SECONDS > end)); then
      echo "deadline of ${DEADLINE}s reached" >>"claimer-$k.fail"
      return 1
    fi
    if ((failures >= 20)); then
      echo "giving up after $failures failures" >>"claimer-$k.fail"
      return 1
    fi
    rc=0
    out=$(tx claim --next --worker "race-$k" --json 2>>"claimer-$k.err") || rc=$?
    if [[ $rc == 3 ]]; then
      return 0  # nothing eligible: the queue is drained (or everything left is held by others)
    elif [[ $rc != 0 ]]; then
      echo "claim --next: exit $rc" >>"claimer-$k.fail"
      failures=$((failures + 1))
      continue
    fi
    if [[ ! $out =~ $re_id ]]; then
      echo "claim --next: no task_id in: ${out//$'\n'/ }" >>"claimer-$k.fail"
      failures=$((failures + 1))
      continue
    fi
    id=${BASH_REMATCH[1]}
    if [[ ! $out =~ $re_token ]]; then
      echo "claim --next: no token in: ${out//$'\n'/ }" >>"claimer-$k.fail"
      failures=$((failures + 1))
      continue
    fi
    token=${BASH_REMATCH[1]}
    echo "$id $token" >>"claimer-$k.claims"
    rc=0
    tx task done "$id" --token "$token" >/dev/null 2>>"claimer-$k.err" || rc=$?
    if [[ $rc == 0 ]]; then
      echo "$id" >>"claimer-$k.done"
    else
      echo "task done $id --token $token: exit $rc" >>"claimer-$k.fail"
      failures=$((failures + 1))
    fi
  done
}

t2=$(now_ms)
for ((k = 1; k <= PROCS; k++)); do
  claimer "$k" &
  PIDS+=($!)
done
bad_exits=0
for pid in "${PIDS[@]}"; do
  wait "$pid" || bad_exits=$((bad_exits + 1))
done
PIDS=()
t3=$(now_ms)
race_ms=$((t3 - t2))
echo "drained with $PROCS processes in $((race_ms / 1000)).$((race_ms % 1000 / 100)) s"

# ---- 3. verify ----------------------------------------------------------------------------------

check "every claim process finished cleanly" "$([[ $bad_exits == 0 ]]; echo $?)" \
  "$bad_exits of $PROCS did not"

fail_lines=$(catall 'claimer-*.fail' | count '')
check "no claim or done call failed" "$([[ $fail_lines == 0 ]]; echo $?)" \
  "$fail_lines failures, e.g. $(catall 'claimer-*.fail' | head -3 | tr '\n' ';')"

# Task ids are left out: a random id may spell it (task-4zbusynu).
busy_lines() { catall 'claimer-*.err' 'adder-*.err' | sed -E 's/task-[0-9a-z]+/task-ID/g' | { grep -i busy || true; }; }
busy=$(busy_lines | count '')
check "no stderr mentions busy" "$([[ $busy == 0 ]]; echo $?)" \
  "$busy lines, e.g. $(busy_lines | head -2 | tr '\n' ';')"

# Stderr of the claimers should hold nothing but the final "nothing eligible" of each loop.
other_err=$(catall 'claimer-*.err' | count -v 'no eligible ready task')
check "claimers' stderr holds only 'no eligible ready task'" "$([[ $other_err == 0 ]]; echo $?)" \
  "$(catall 'claimer-*.err' | { grep -v 'no eligible ready task' || true; } | head -3 | tr '\n' ';')"

done_lines=$(catall 'claimer-*.done' | count '')
check "claimers report $TASKS tasks done" "$([[ $done_lines == "$TASKS" ]]; echo $?)" "$done_lines"

active=0
for ((k = 1; k <= PROCS; k++)); do [[ -s claimer-$k.done ]] && active=$((active + 1)); done
echo "claimers that completed at least one task: $active of $PROCS"

tx task list --json >tasks.json 2>verify.err || echo "task list: exit $?" >>verify.err
tx events --json >events.json 2>>verify.err || echo "events: exit $?" >>verify.err
tx worker list --json >workers.json 2>>verify.err || echo "worker list: exit $?" >>verify.err
check "tx task list / events / worker list --json succeed" "$([[ ! -s verify.err ]]; echo $?)" \
  "$(head -3 verify.err | tr '\n' ';')"

# The JSON checks print "ok|FAIL name: detail" lines; `tx task show` of every task runs here too.
verify_out=$("$PY" - "$TX" "$TASKS" "$PROCS" "${DB_ARGS[@]}" <<'PYEOF' || true
import glob, json, subprocess, sys
tx, n, procs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
db_args = sys.argv[4:]  # --db URL on PostgreSQL

def check(name, ok, detail=""):
    print(("ok    " if ok else "FAIL  ") + name + ("" if ok or not detail else ": " + str(detail)[:300]))

try:
    tasks = json.load(open("tasks.json"))
    events = json.load(open("events.json"))
    workers = json.load(open("workers.json"))
except Exception as e:  # noqa: BLE001
    check("--json output parses", False, e)
    sys.exit(0)
check("--json output parses", True)

ids = [t["id"] for t in tasks]
check(f"{n} tasks exist", len(ids) == n and len(set(ids)) == n, f"{len(ids)} tasks, {len(set(ids))} distinct")
statuses = {}
for t in tasks:
    statuses[t["status"]] = statuses.get(t["status"], 0) + 1
check("every task is done", statuses == {"done": n}, statuses)
check("no task is running", statuses.get("running", 0) == 0, statuses.get("running", 0))
bad_attempt = [t["id"] for t in tasks if t["attempt"] != 1]
check("every task took exactly one attempt", not bad_attempt, f"{len(bad_attempt)} tasks, e.g. {bad_attempt[:3]}")

ev_ids = [e["id"] for e in events]
check("event ids strictly increase", all(a < b for a, b in zip(ev_ids, ev_ids[1:])))
def per_task(kind):
    counts = {}
    for e in events:
        if e["type"] == kind:
            counts[e["task_id"]] = counts.get(e["task_id"], 0) + 1
    return counts
for kind in ("task.claimed", "task.done"):
    counts = per_task(kind)
    total = sum(counts.values())
    dup = [i for i, c in counts.items() if c != 1]
    check(f"exactly {n} {kind} events, one per task",
          total == n and not dup and set(counts) == set(ids),
          f"{total} events over {len(counts)} tasks; repeated: {dup[:3]}")
for kind in ("task.requeued", "task.released", "lease.expired", "task.failed", "worker.dead"):
    c = sum(1 for e in events if e["type"] == kind)
    check(f"no {kind} events", c == 0, c)
tokens = [e["data"].get("token") for e in events if e["type"] == "task.claimed"]
check("every claim got its own fencing token", len(set(tokens)) == len(tokens), f"{len(tokens)} tokens, {len(set(tokens))} distinct")

# What the claim loops saw: no task handed to two claimers, same tokens as the event log.
seen = {}
for path in glob.glob("claimer-*.claims"):
    for line in open(path):
        tid, tok = line.split()
        seen.setdefault(tid, []).append((path, int(tok)))
twice = {t: v for t, v in seen.items() if len(v) > 1}
check("no task was handed to two claimers", not twice, list(twice.items())[:2])
check("claimers saw every task", set(seen) == set(ids), f"{len(seen)} of {n}")
claimed_tokens = {e["task_id"]: e["data"].get("token") for e in events if e["type"] == "task.claimed"}
mismatch = [t for t, v in seen.items() if claimed_tokens.get(t) != v[0][1]]
check("tokens printed by tx claim match the event log", not mismatch, mismatch[:3])

race_workers = [w for w in workers if w["name"].startswith("race-")]
check(f"{procs} race workers registered, none busy",
      len(race_workers) == procs and all(w["status"] != "busy" for w in race_workers),
      [(w["name"], w["status"]) for w in race_workers])
completed = sum(w["metadata"].get("tasks_completed", 0) for w in race_workers)
check("workers' tasks_completed add up", completed == n, completed)

# Every task's attempts[]: exactly one, completed, ended by an exit, by the worker that claimed it.
bad = []
for tid in ids:
    r = subprocess.run([tx, *db_args, "task", "show", tid, "--json"], capture_output=True,
                       text=True, timeout=30)
    if r.returncode != 0:
        bad.append((tid, "exit %d" % r.returncode))
        continue
    a = json.loads(r.stdout)["attempts"]
    if len(a) != 1 or a[0]["status"] != "completed" or a[0]["end_reason"] != "exited" or a[0]["n"] != 1:
        bad.append((tid, a))
check("every task has exactly one attempt, completed", not bad, f"{len(bad)} tasks, e.g. {bad[:2]}")
PYEOF
)
echo "$verify_out"
PASSED=$((PASSED + $(count '^ok ' <<<"$verify_out")))
FAILED=$((FAILED + $(count '^FAIL ' <<<"$verify_out")))
mapfile -t -O "${#FAILED_NAMES[@]}" FAILED_NAMES < <(sed -n 's/^FAIL  \([^:]*\).*/\1/p' <<<"$verify_out")
if ! grep -q '^ok    every task has exactly one attempt' <<<"$verify_out" &&
   ! grep -q '^FAIL  every task has exactly one attempt' <<<"$verify_out"; then
  check "the JSON verification ran to the end" 1
fi

t4=$(now_ms)
echo "verified in $(((t4 - t3) / 1000)).$(((t4 - t3) % 1000 / 100)) s; total $(((t4 - t0) / 1000)) s"
report
[[ $FAILED == 0 ]]
