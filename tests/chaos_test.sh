#!/usr/bin/env bash
# Orchestrator chaos: 500 short tasks drained by `tx orchestrator start --workers 6` (on a SQLite
# store, or with TX_SHELL_BACKEND=postgres on a fresh PostgreSQL database) while a killer
# SIGKILLs one random worker of the pool every 300 ms and the orchestrator itself is SIGKILLed and
# restarted twice (at about 1/3 and 2/3 of the tasks done).
#
#   bash tests/chaos_test.sh /path/to/tx
#
# Each task runs `sh -c 'sleep 0.05..0.2 && echo "$TX_TASK_ID $TX_CLAIM_TOKEN $(date +%s%3N)"
# >>agents.log'`, so the test knows which attempts' agents ran to the end, and when. A killed
# worker's task goes back to the queue (max_attempts 100: killed attempts count); a killed
# orchestrator's workers drain by themselves (parent-death SIGTERM) and the next orchestrator
# adopts them. Once every task is done the killer stops and `tx orchestrator stop` ends the pool.
# Then, in the store (sqlite3 CLI or python3's sqlite3 module; psql): every task done, exactly one
# completed claim per task (whose agent ran to the end), no agent that finished after its claim
# had ended, no active claim, no live worker, one task.done event per task, no attempt that
# failed, PRAGMA integrity_check (PostgreSQL: amcheck's index checks) ok; on the machine: no
# process whose environment carries
# TX_POOL_DB=<db> (a worker of the pool), and no agent (TX_AGENT_SOCKET, running here), is left.
#
# Knobs (environment): TX_CHAOS_TASKS (500), TX_CHAOS_WORKERS (6), TX_CHAOS_KILL_MS (300),
# TX_CHAOS_RESTARTS orchestrator kills (2), TX_CHAOS_DEADLINE seconds for the whole run (600),
# TX_CHAOS_TASK_MS the range of each task's sleep ("50-200"), TX_CHAOS_KEEP=1 keeps the scratch
# directory. TX_CHAOS_DEFAULTS=1 starts the pool with nothing but --workers (the pool's default
# restart, backoff and crash-loop settings, which must never give a slot up for good);
# TX_CHAOS_KILL_FOR=S stops the killing S seconds in, and TX_CHAOS_DONE_WITHIN=S then requires
# every task done within S seconds of that. Prints a summary line and "N passed, M failed" last;
# exits non-zero on any failure.

set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shell_lib.sh"
export LC_ALL=C  # sort and comm below agree on the order

if [[ $# -lt 1 ]]; then
  echo "usage: $0 /path/to/tx" >&2
  exit 2
fi
TX=$(realpath "$1")
[[ -x $TX ]] || { echo "chaos_test: $TX is not executable" >&2; exit 2; }
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

TASKS=${TX_CHAOS_TASKS:-500}
WORKERS=${TX_CHAOS_WORKERS:-6}
KILL_MS=${TX_CHAOS_KILL_MS:-300}
RESTARTS=${TX_CHAOS_RESTARTS:-2}
DEADLINE=${TX_CHAOS_DEADLINE:-600}  # seconds the whole run may take
TASK_MS=${TX_CHAOS_TASK_MS:-50-200}
TASK_MS_MIN=${TASK_MS%-*}
TASK_MS_MAX=${TASK_MS#*-}
DEFAULTS=${TX_CHAOS_DEFAULTS:-0}
KILL_FOR=${TX_CHAOS_KILL_FOR:-0}        # 0: kill until every task is done
DONE_WITHIN=${TX_CHAOS_DONE_WITHIN:-0}  # 0: no bound after the killing stops
ADDERS=4
CMD_TIMEOUT=60                      # seconds any single short tx invocation may take (ASan: slow)
START_TIMEOUT=90                    # seconds an orchestrator may take to say it runs
STOP_TIMEOUT=120                    # seconds `tx orchestrator stop` may take (drain is 20 s max)
# Time kept back from the drain for stopping and checking, so the run ends within DEADLINE.
RESERVE=$((DEADLINE / 4 < 150 ? DEADLINE / 4 : 150))

# Nothing from the caller's environment may steer tx.
unset TX_DB TX_CLAIM_TOKEN TX_ALLOWED_COMMANDS TX_SYNCHRONOUS TX_TASK_ID TX_WORKER_ID TX_ATTEMPT \
  TX_POOL_DB

WORK=$(mktemp -d /tmp/tx-chaos-XXXXXX)
WORK=$(cd "$WORK" && pwd -P)  # as tx sees it: the pool's TX_POOL_DB is the absolute store path
cd "$WORK"
use_store
DB=$STORE_DB
PIDS=()        # adders
ORCH_PIDS=()   # every orchestrator started
ORCH_PID=      # the current one
KILLER_PID=

# Pids of processes (not zombies) whose environment holds exactly ENTRY; never fails.
pids_with_env() {
  local entry=$1
  { grep -lzxFs -- "$entry" /proc/[0-9]*/environ 2>/dev/null || true; } |
    sed -e 's|^/proc/||' -e 's|/environ$||'
}
pool_pids() { pids_with_env "TX_POOL_DB=$DB"; }   # workers of this store's pool
# Agents run by those workers: an agent has its worker's socket (TX_AGENT_SOCKET), not the store,
# and runs here.
agent_pids() {
  local file pid
  { grep -lzs -- "^TX_AGENT_SOCKET=" /proc/[0-9]*/environ 2>/dev/null || true; } |
    while read -r file; do
      pid=${file#/proc/}
      pid=${pid%/environ}
      [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$WORK" ]] && echo "$pid"
    done
  return 0
}
# The workers alone: an agent between its fork and its exec still carries its worker's
# environment (and command line), but its parent is a worker, not the orchestrator.
worker_pids() {
  local pid ppid
  for pid in $(pool_pids); do
    ppid=$(awk '{ print $4 }' "/proc/$pid/stat" 2>/dev/null) || continue
    [[ -n $ppid ]] || continue
    tr '\0' '\n' 2>/dev/null <"/proc/$ppid/environ" | grep -qxF "TX_POOL_DB=$DB" || echo "$pid"
  done
  return 0
}
# "pid: cmdline" for each pid given; never fails.
describe_pids() {
  local pid
  for pid in "$@"; do
    echo "$pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || echo '(gone)')"
  done
  return 0
}

cleanup() {
  local pid pass
  : >"$WORK/stop-killer" 2>/dev/null || true
  if [[ -n $KILLER_PID ]]; then kill "$KILLER_PID" 2>/dev/null || true; fi
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${ORCH_PIDS[@]}"; do { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true; done
  for pass in 1 2 3; do
    for pid in $(pool_pids) $(agent_pids); do kill -KILL "$pid" 2>/dev/null || true; done
    sleep 0.1
  done
  wait 2>/dev/null || true
  cd /
  drop_store
  if [[ ${TX_CHAOS_KEEP:-0} == 1 ]]; then
    echo "chaos_test: kept $WORK" >&2
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT   # so that cleanup runs on these too
trap 'exit 143' TERM
cd "$WORK"

# Runs SQL against the store read-only, rows as "a|b|c" lines: psql for PostgreSQL; for SQLite the
# sqlite3 CLI if installed, else python3's sqlite3 module. Fails (non-zero) if the query does.
# IS_NOT is the dialect's null-safe "differs from".
IS_NOT="IS NOT"
if [[ -n ${STORE_PG_ADMIN:-} ]]; then
  IS_NOT="IS DISTINCT FROM"
  sql() { timeout "$CMD_TIMEOUT" psql -X -q -A -t -F '|' -v ON_ERROR_STOP=1 "$DB" -c "$1"; }
elif command -v sqlite3 >/dev/null 2>&1; then
  sql() { timeout "$CMD_TIMEOUT" sqlite3 -readonly -batch -cmd '.timeout 10000' "$DB" "$1"; }
else
  sql() {
    timeout "$CMD_TIMEOUT" "$PY" - "$DB" "$1" <<'PYEOF'
import sqlite3, sys
con = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True, timeout=10)
for row in con.execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))
PYEOF
  }
fi

T0=$(now_ms)
DRAIN_END=$((SECONDS + DEADLINE - RESERVE))
tx init >/dev/null

# ---- 1. add the tasks ---------------------------------------------------------------------------

# Each task sleeps TASK_MS (50–200 ms), then appends "ID TOKEN END_MS" to agents.log.
chaos_add() {
  local ms=$((TASK_MS_MIN + RANDOM % (TASK_MS_MAX - TASK_MS_MIN + 1)))
  tx task add "chaos task $1" --max-attempts 100 \
    --command "sh -c 'sleep $((ms / 1000)).$(printf %03d $((ms % 1000))) && echo \"\$TX_TASK_ID \$TX_CLAIM_TOKEN \$(date +%s%3N)\" >>$WORK/agents.log'"
}
add_tasks "$TASKS" "$ADDERS" chaos_add
if [[ $FAILED != 0 ]]; then
  report
  exit 1
fi

# ---- 2. chaos -----------------------------------------------------------------------------------

# Counts tasks by status as "done 12 ready 3 …"; empty if the store cannot be read just now.
status_counts() { sql "SELECT status, count(*) FROM tasks GROUP BY status" 2>/dev/null | tr '|\n' '  ' || true; }
done_count() { sql "SELECT count(*) FROM tasks WHERE status = 'done'" 2>/dev/null || echo -1; }

diagnose() {  # what a failed drain leaves to look at
  local f
  echo "---- tasks by status: $(status_counts)"
  echo "---- tx orchestrator status:"
  tx orchestrator status 2>&1 | head -20 || true
  echo "---- live pool processes: $(pool_pids | tr '\n' ' ')"
  for f in orch-*.log; do
    [[ -f $f ]] || continue
    echo "---- last lines of $f:"
    tail -15 "$f"
  done
  for f in .tx/logs/workers/*.log; do
    [[ -f $f ]] || continue
    echo "---- last lines of $f:"
    tail -4 "$f"
  done
  return 0
}

ORCH_N=0
# Starts an orchestrator in the background (orch-N.log) and waits until `tx orchestrator status`
# says it runs. A start refused with exit 4 (the killed one's lock or row not yet free) is retried.
# Returns 1 (after printing why) if it cannot get one running within START_TIMEOUT.
start_orchestrator() {
  local end=$((SECONDS + START_TIMEOUT)) rc state refused=0
  ORCH_N=$((ORCH_N + 1))
  local tuned=(--heartbeat-interval 1s --poll-interval 1s --max-restarts 100000 --max-backoff 500ms
               --shutdown-timeout 20s)
  [[ $DEFAULTS == 1 ]] && tuned=()
  while :; do
    "$TX" "${DB_ARGS[@]}" orchestrator start --workers "$WORKERS" "${tuned[@]}" \
      >>"orch-$ORCH_N.log" 2>&1 &
    ORCH_PID=$!
    ORCH_PIDS+=("$ORCH_PID")
    while :; do
      state=$(tx orchestrator status --json 2>/dev/null |
        "$PY" -c 'import json, sys; d = json.load(sys.stdin); print(d["status"], d["pid"])' \
          2>/dev/null || true)
      if [[ $state == "running $ORCH_PID" ]]; then
        echo "orchestrator $ORCH_N running (pid $ORCH_PID$( ((refused == 0)) ||
          echo ", after $refused refused starts"))"
        return 0
      fi
      if ! kill -0 "$ORCH_PID" 2>/dev/null; then
        rc=0
        wait "$ORCH_PID" || rc=$?
        if [[ $rc == 4 ]]; then
          refused=$((refused + 1))
          break  # refused: try again
        fi
        echo "orchestrator $ORCH_N (pid $ORCH_PID) exited $rc before running:"
        tail -5 "orch-$ORCH_N.log"
        return 1
      fi
      if ((SECONDS > end)); then
        echo "orchestrator $ORCH_N (pid $ORCH_PID) not running after ${START_TIMEOUT}s ($state)"
        return 1
      fi
      sleep 0.1
    done
    if ((SECONDS > end)); then
      echo "orchestrator $ORCH_N: still refused after ${START_TIMEOUT}s ($refused tries):"
      tail -3 "orch-$ORCH_N.log"
      return 1
    fi
    sleep 0.2
  done
}

# SIGKILLs one random live worker of the pool (never an agent) every KILL_MS until stop-killer exists; logs each
# kill that hit ("ms pid") to kills.log.
killer() {
  local pids victim interval
  interval=$(printf '%d.%03d' $((KILL_MS / 1000)) $((KILL_MS % 1000)))
  RANDOM=$$
  : >kills.log
  local until=$((KILL_FOR > 0 ? SECONDS + KILL_FOR : 0))
  while [[ ! -e stop-killer ]]; do
    if ((until > 0 && SECONDS >= until)); then
      echo "$(now_ms)" >killing-stopped
      break
    fi
    sleep "$interval"
    mapfile -t pids < <(worker_pids)
    ((${#pids[@]} > 0)) || continue
    victim=${pids[RANDOM % ${#pids[@]}]}
    if kill -KILL "$victim" 2>/dev/null; then echo "$(now_ms) $victim" >>kills.log; fi
  done
}

t2=$(now_ms)
drained=1
orch_kills=0
orch_died=0
if start_orchestrator; then
  killer &
  KILLER_PID=$!
  last_report=$SECONDS
  while :; do
    n=$(done_count)
    if [[ $n == "$TASKS" ]]; then
      drained=0
      break
    fi
    failed_now=$(sql "SELECT count(*) FROM tasks WHERE status IN ('failed', 'cancelled')" \
      2>/dev/null || echo 0)
    if [[ $failed_now != 0 ]]; then
      echo "$failed_now tasks failed or were cancelled: they can never be done"
      break
    fi
    if ((SECONDS > DRAIN_END)); then
      echo "deadline: not drained $((DEADLINE - RESERVE))s into the run"
      break
    fi
    if ((DONE_WITHIN > 0)) && [[ -e killing-stopped ]] &&
      (($(now_ms) - $(cat killing-stopped) > DONE_WITHIN * 1000)); then
      echo "not drained ${DONE_WITHIN}s after the killing stopped"
      break
    fi
    if ! kill -0 "$ORCH_PID" 2>/dev/null; then
      rc=0
      wait "$ORCH_PID" || rc=$?
      echo "orchestrator $ORCH_N (pid $ORCH_PID) exited by itself (exit $rc):"
      tail -5 "orch-$ORCH_N.log"
      orch_died=1
      break
    fi
    # At about 1/3 and 2/3 of the tasks done: SIGKILL the orchestrator, start another.
    if ((orch_kills < RESTARTS && n >= TASKS * (orch_kills + 1) / (RESTARTS + 1))); then
      kill -KILL "$ORCH_PID"
      wait "$ORCH_PID" 2>/dev/null || true
      orch_kills=$((orch_kills + 1))
      echo "killed orchestrator $ORCH_N (pid $ORCH_PID) with $n tasks done"
      # The first restart races the orphaned workers' drain (the new one adopts those still
      # running); before the second the killer has a second to hit orphans no one watches (the
      # new one finds them gone and requeues their tasks).
      if ((orch_kills % 2 == 0)); then sleep 1; fi
      start_orchestrator || break
    fi
    if ((SECONDS - last_report >= 10)); then
      echo "  $((($(now_ms) - t2) / 1000)) s: $(status_counts)," \
        "$(catall kills.log | count '') workers killed"
      last_report=$SECONDS
    fi
    sleep 0.5
  done
  : >stop-killer
  wait "$KILLER_PID" || true
  KILLER_PID=
fi
t3=$(now_ms)
kills=$(catall kills.log | count '')
echo "drain: $(secs $((t3 - t2))) s, $kills workers killed, $orch_kills orchestrator kills"
if [[ -e killing-stopped ]]; then
  echo "  the killing stopped $(secs $(($(cat killing-stopped) - t2))) s in; drained" \
    "$(secs $((t3 - $(cat killing-stopped)))) s after"
fi
check "every task done before the deadline" "$drained" "$(status_counts)"
check "no orchestrator exited unless killed" "$orch_died"
check "the orchestrator was killed and restarted $RESTARTS times" \
  "$([[ $orch_kills == "$RESTARTS" && $ORCH_N == $((RESTARTS + 1)) ]]; echo $?)" \
  "$orch_kills kills, $ORCH_N starts"
if [[ $drained != 0 ]]; then diagnose; fi

# ---- 3. stop ------------------------------------------------------------------------------------

stop_rc=0
stop_out=$(timeout "$STOP_TIMEOUT" "$TX" "${DB_ARGS[@]}" orchestrator stop 2>&1) || stop_rc=$?
check "tx orchestrator stop succeeds" "$stop_rc" "exit $stop_rc: $stop_out"
orch_rc=0
if kill -0 "$ORCH_PID" 2>/dev/null; then
  # stop has returned: the orchestrator only has its last words to write.
  for ((i = 0; i < 100; i++)); do kill -0 "$ORCH_PID" 2>/dev/null || break; sleep 0.1; done
fi
if kill -0 "$ORCH_PID" 2>/dev/null; then
  orch_rc=timeout
else
  wait "$ORCH_PID" || orch_rc=$?
fi
check "the last orchestrator exited 0" "$([[ $orch_rc == 0 ]]; echo $?)" \
  "exit $orch_rc; $(tail -3 "orch-$ORCH_N.log" | tr '\n' ';')"

# Nothing of ours may be left: no worker of the pool, no agent.
mapfile -t left < <(pool_pids; agent_pids)
check "no worker or agent process is left" "$([[ ${#left[@]} == 0 ]]; echo $?)" \
  "$(describe_pids "${left[@]}" | head -5 | tr '\n' ';')"
if ((${#left[@]} > 0)); then
  sleep 3
  mapfile -t still < <(pool_pids; agent_pids)
  echo "      (3 s later ${#still[@]} of them still run)"
fi
state=$(tx orchestrator status --json 2>/dev/null |
  "$PY" -c 'import json, sys; print(json.load(sys.stdin)["status"])' 2>/dev/null || echo '?')
check "tx orchestrator status says stopped" "$([[ $state == stopped ]]; echo $?)" "$state"
t4=$(now_ms)

# The logs: no sanitizer report, no error-level line (spdlog's level is the second field).
logs=(orch-*.log .tx/logs/workers/*.log)
bad_logs=$(catall "${logs[@]}" | { grep -E 'Sanitizer|runtime error:' || true; } | head -3)
check "no sanitizer report in the orchestrator or worker logs" "$([[ -z $bad_logs ]]; echo $?)" \
  "$(tr '\n' ';' <<<"$bad_logs")"
bad_logs=$(catall "${logs[@]}" | awk '$2 == "error" || $2 == "critical"' | head -3)
check "no error in the orchestrator or worker logs" "$([[ -z $bad_logs ]]; echo $?)" \
  "$(tr '\n' ';' <<<"$bad_logs")"

# ---- 4. verify the store ------------------------------------------------------------------------

# q NAME EXPECTED SQL: one check that the query prints exactly EXPECTED.
q() {
  local name=$1 want=$2 got rc=0
  got=$(sql "$3" 2>&1) || rc=$?
  if [[ $rc != 0 ]]; then
    check "$name" 1 "query failed (exit $rc): $(head -2 <<<"$got" | tr '\n' ';')"
  else
    check "$name" "$([[ $got == "$want" ]]; echo $?)" "$(head -5 <<<"$got" | tr '\n' ';')"
  fi
}
if [[ -n ${STORE_PG_ADMIN:-} ]]; then
  # Every B-tree index of the store checked against its table (amcheck, from postgresql-15).
  psql -X -q "$DB" -c "CREATE EXTENSION IF NOT EXISTS amcheck" >/dev/null 2>&1 || true
  q "amcheck finds every index consistent with its table" ok \
    "SELECT CASE WHEN count(*) > 0 THEN 'ok' END FROM (
       SELECT bt_index_check(c.oid, true) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'btree'
       AND c.relnamespace = 'public'::regnamespace) checked"
else
  q "PRAGMA integrity_check is ok" ok "PRAGMA integrity_check"
fi
q "$TASKS tasks exist" "$TASKS" "SELECT count(*) FROM tasks"
q "every task is done" "done|$TASKS" "SELECT status, count(*) FROM tasks GROUP BY status"
q "every task has exactly one completed claim" 0 \
  "SELECT count(*) FROM tasks t
    WHERE (SELECT count(*) FROM claims c WHERE c.task_id = t.id AND c.status = 'completed') != 1"
q "no claim is active" 0 "SELECT count(*) FROM claims WHERE status = 'active'"
q "every completed claim ended with its agent's exit" "exited|$TASKS" \
  "SELECT end_reason, count(*) FROM claims WHERE status = 'completed' GROUP BY end_reason"
q "no attempt failed, timed out or lost its lease" "" \
  "SELECT end_reason, count(*) FROM claims
    WHERE status != 'completed' AND end_reason NOT IN ('worker_died', 'shutdown')
    GROUP BY end_reason"
q "every task's attempt is that of its completed claim" 0 \
  "SELECT count(*) FROM tasks t WHERE t.attempt $IS_NOT
     (SELECT c.attempt FROM claims c WHERE c.task_id = t.id AND c.status = 'completed')"
q "exactly one task.done event per task" "$TASKS|$TASKS" \
  "SELECT count(*), count(DISTINCT task_id) FROM events WHERE type = 'task.done'"
q "no lease expired or was lost" "" \
  "SELECT type, count(*) FROM events WHERE type IN ('lease.expired', 'lease.lost') GROUP BY type"
# Every death here is a killed process, seen through it (pidfd, or gone at an orchestrator's
# start) — none is a live worker judged dead by its heartbeats.
q "every dead worker is one whose process exited (worker.crashed)" "" \
  "SELECT d.worker_id || ' at ' || d.at || ': ' || d.data FROM events d
    WHERE d.type = 'worker.dead' AND NOT EXISTS
     (SELECT 1 FROM events c WHERE c.type = 'worker.crashed' AND c.worker_id = d.worker_id)"
q "no worker is live" "" \
  "SELECT id, slot, status, pid FROM workers WHERE status NOT IN ('stopped', 'dead')"
q "no worker still holds a task" 0 "SELECT count(*) FROM workers WHERE current_task_id != ''"

# The completed claim of every task is one whose agent ran to the end (it wrote its line).
completed_rc=0
sql "SELECT task_id || ' ' || token FROM claims WHERE status = 'completed'" >completed.txt ||
  completed_rc=$?
touch agents.log
cut -d' ' -f1,2 agents.log | sort -u >agents.sorted
missing=$(sort -u completed.txt | comm -23 - agents.sorted | wc -l)
check "every completed claim's agent ran to the end" \
  "$([[ $completed_rc == 0 && $missing == 0 && -s completed.txt ]]; echo $?)" \
  "$missing completed claims without an agent run, e.g. $(sort -u completed.txt | comm -23 - agents.sorted | head -3 | tr '\n' ';')"

# No agent ran past the end of its claim: an agent whose worker was killed is killed with it (the
# orchestrator kills its group, the parent-death signal its leader) before its task is requeued,
# so none may finish (write its line) after its claim ended — least of all while another worker
# redoes the task.
# On PostgreSQL the claim's end is the server's time, as this host's tx reads it: its clock plus
# an offset measured to within half a round trip (store/postgres/pg_conn.cc), while the agent's
# line carries this host's own clock. Such a cross-clock comparison gets a few milliseconds'
# grace there; a killed worker's agent that ran on would finish far later.
SKEW_MS=0
[[ -z ${STORE_PG_ADMIN:-} ]] || SKEW_MS=25
claims_rc=0
sql "SELECT token, status, ended_at, end_reason FROM claims" >claims.txt || claims_rc=$?
late=$(awk -v skew="$SKEW_MS" 'NR == FNR { split($0, c, "|"); st[c[1]] = c[2]; end[c[1]] = c[3]; why[c[1]] = c[4]; next }
  !($2 in st) { print $1 " token " $2 ": no such claim"; next }
  $3 + 0 > end[$2] + skew { print $1 " token " $2 " (" st[$2] ", " why[$2] "): agent finished " \
    ($3 - end[$2]) " ms after the claim ended" }' claims.txt agents.log)
check "no agent finished after its claim had ended" \
  "$([[ $claims_rc == 0 && -z $late ]]; echo $?)" \
  "$(count '' <<<"$late") agent runs, e.g. $(head -3 <<<"$late" | tr '\n' ';')"

claims_total=$(sql "SELECT count(*) FROM claims" 2>/dev/null || echo '?')
died=$(sql "SELECT count(*) FROM claims WHERE end_reason = 'worker_died'" 2>/dev/null || echo '?')
crashed=$(sql "SELECT count(*) FROM events WHERE type = 'worker.crashed'" 2>/dev/null || echo '?')
agent_runs=$(count '' <agents.log)
adopted=$(catall 'orch-*.log' | count 'adopting worker')
gone=$(catall 'orch-*.log' | count 'found by the orchestrator at start\|its process [0-9]* is gone')
# The chaos must have happened: workers killed, and some of them while running a task.
check "workers were killed ($kills) and tasks requeued ($died attempts ended worker_died)" \
  "$([[ $kills -ge 10 && $died =~ ^[0-9]+$ && $died -ge 1 ]]; echo $?)"

t5=$(now_ms)
echo "summary: $TASKS tasks, $WORKERS workers, $kills workers killed, $orch_kills orchestrator" \
  "kills/restarts ($adopted workers adopted, $gone found gone), $claims_total claims ($died worker_died, $crashed worker.crashed events," \
  "$agent_runs agent runs finished); drain $(secs $((t3 - t2))) s, stop $(secs $((t4 - t3))) s," \
  "total $(secs $((t5 - T0))) s"
report
[[ $FAILED == 0 ]]
