# Sourced by the shell tests (race_test.sh, chaos_test.sh): the checks they count, time, and the
# parallel task adders. Expects TX (the binary), CMD_TIMEOUT (seconds per tx call) and a PIDS
# array the caller's cleanup kills; runs in the test's scratch directory.

PASSED=0
FAILED=0
FAILED_NAMES=()  # the names of the checks that failed

check() {  # check NAME CONDITION-RESULT(0 = pass) [DETAIL]
  local name=$1 ok=$2 detail=${3:-}
  if [[ $ok == 0 ]]; then
    PASSED=$((PASSED + 1))
    echo "ok    $name"
  else
    FAILED=$((FAILED + 1))
    FAILED_NAMES+=("$name")
    echo "FAIL  $name${detail:+: $detail}"
  fi
}

# report: the last lines of a test's output: the checks that failed, by name (a log cut to its
# end still says which), then "N passed, M failed".
report() {
  if ((FAILED > 0)); then
    local names
    printf -v names '%s; ' "${FAILED_NAMES[@]}"
    echo "failed: ${names%; }"
  fi
  echo "$PASSED passed, $FAILED failed"
}

# use_store: where the test's store lives. TX_SHELL_BACKEND=postgres (ctest's *_pg variants) makes a
# fresh database on the server of the ctest fixture pg (the first line of $TX_TEST_PG_URL_FILE),
# sets STORE_DB to its URL and DB_ARGS to (--db URL), which every tx call passes (tx below, and
# the tests' direct calls); drop_store drops it again (call it from the test's cleanup).
# Otherwise STORE_DB is the SQLite file tx init makes in the scratch directory and DB_ARGS is
# empty. (Not TX_DB in the environment: the tests look for leftover processes by TX_DB=<store>.)
# Prints which store the test runs on.
use_store() {
  STORE_PG_ADMIN=
  if [[ ${TX_SHELL_BACKEND:-sqlite} == postgres ]]; then
    local file=${TX_TEST_PG_URL_FILE:-}
    [[ -n $file && -s $file ]] || {
      echo "TX_SHELL_BACKEND=postgres needs the server of the ctest fixture pg" \
        "(TX_TEST_PG_URL_FILE=${file:-unset}); run it through ctest" >&2
      exit 2
    }
    STORE_PG_ADMIN=$(head -n 1 "$file")
    STORE_PG_NAME="tx_sh_$$_$RANDOM"
    psql -X -q -v ON_ERROR_STOP=1 "$STORE_PG_ADMIN" -c "CREATE DATABASE $STORE_PG_NAME" >/dev/null
    STORE_DB="${STORE_PG_ADMIN%/*}/$STORE_PG_NAME"
    DB_ARGS=(--db "$STORE_DB")
  else
    STORE_DB=$PWD/.tx/tx.db
    DB_ARGS=()
  fi
  echo "store: $STORE_DB"
}
drop_store() {
  [[ -n ${STORE_PG_ADMIN:-} ]] || return 0
  psql -X -q "$STORE_PG_ADMIN" -c "DROP DATABASE IF EXISTS $STORE_PG_NAME WITH (FORCE)" \
    >/dev/null 2>&1 || true
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
DB_ARGS=()
tx() { timeout "$CMD_TIMEOUT" "$TX" "${DB_ARGS[@]}" "$@"; }

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
