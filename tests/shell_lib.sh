# Sourced by the shell tests (race_test.sh, chaos_test.sh): the checks they count, time, and the
# parallel task adders. Expects TX (the binary), CMD_TIMEOUT (seconds per tx call) and a PIDS
# array the caller's cleanup kills; runs in the test's scratch directory.

PASSED=0
FAILED=0
check() {  # check NAME CONDITION-RESULT(0 = pass) [DETAIL]
  local name=$1 ok=$2 detail=${3:-}
  if [[ $ok == 0 ]]; then
    PASSED=$((PASSED + 1))
    echo "ok    $name"
  else
    FAILED=$((FAILED + 1))
    echo "FAIL  $name${detail:+: $detail}"
  fi
}

now_ms() { date +%s%3N; }
secs() { echo "$(($1 / 1000)).$(($1 % 1000 / 100))"; }  # ms → "12.3"
# Prints the files matching the glob patterns given (quoted), or nothing; never fails.
catall() {
  local pattern f
  for pattern in "$@"; do
    for f in $pattern; do
      if [[ -f $f ]]; then cat "$f"; fi
    done
  done
  return 0
}
# Counts the lines of stdin grep selects (grep -c ARGS); never fails.
count() { grep -c "$@" || true; }
tx() { timeout "$CMD_TIMEOUT" "$TX" "$@"; }

# add_tasks N LOOPS ADD_ONE: calls `ADD_ONE I` for every I in 0..N-1, split over LOOPS parallel
# loops (one tx process per task add, as concurrent clients would). A failed call leaves a line
# in adder-K.fail, its stderr in adder-K.err; then checks "every task add succeeded".
add_tasks() {
  local n=$1 loops=$2 add_one=$3 k failures
  adder() {
    local k=$1 i rc
    RANDOM=$((k * 7919 + $$))
    for ((i = k; i < n; i += loops)); do
      rc=0
      "$add_one" "$i" >/dev/null 2>>"adder-$k.err" || rc=$?
      if [[ $rc != 0 ]]; then echo "task add $i: exit $rc" >>"adder-$k.fail"; fi
    done
  }
  local t0
  t0=$(now_ms)
  for ((k = 0; k < loops; k++)); do
    adder "$k" &
    PIDS+=($!)
  done
  wait "${PIDS[@]}"
  PIDS=()
  echo "added $n tasks with $loops loops in $(secs $(($(now_ms) - t0))) s"
  failures=$(catall 'adder-*.fail' | count '')
  check "every task add succeeded" "$([[ $failures == 0 ]]; echo $?)" \
    "$failures failed: $(catall 'adder-*.fail' 'adder-*.err' | head -3 | tr '\n' ';')"
}
