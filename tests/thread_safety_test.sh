#!/usr/bin/env bash
# The thread-safety check (scripts/thread_safety) refuses what it is there for:
# thread_safety_snippet.cc, compiled with the check's flags (THREAD_SAFETY_FLAGS) and the real
# core/mutex.h, passes as it is, and fails with clang's diagnostic, and that one alone, with each
# of its faults switched on. The clean compile comes first, so that a fault's failure cannot be
# some unrelated error.
#
#   bash tests/thread_safety_test.sh /usr/bin/clang++
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

CXX="$1"
SNIPPET="$ROOT/tests/thread_safety_snippet.cc"

# compile [FLAG...]: clang's output; fails as clang does.
compile() {
  "$CXX" -std=c++20 -Wall -Wextra -I"$ROOT/src" "${THREAD_SAFETY_FLAGS[@]}" "$@" "$SNIPPET" 2>&1
}

if ! out=$(compile); then
  echo "FAIL: the snippet does not pass as it is:"
  echo "$out"
  exit 1
fi
echo "ok: the snippet passes as it is"

failed=0
# refused FAULT DIAGNOSTIC: compiling with -DFAULT fails with one error, DIAGNOSTIC.
refused() {
  local out
  if out=$(compile -D"$1"); then
    echo "FAIL: $1 passed the check"
    failed=1
  elif [ "$(grep -c 'error:' <<<"$out")" != 1 ] || ! grep -qF -- "error: $2" <<<"$out"; then
    echo "FAIL: $1 did not fail with \"$2\" alone:"
    echo "$out"
    failed=1
  else
    echo "ok: $1 is refused: $2"
  fi
}
refused TX_READ_WITHOUT_LOCK "reading variable 'count_' requires holding mutex 'mu_'"
refused TX_CALL_WITHOUT_LOCK "calling function 'AddLocked' requires holding mutex 'mu_' exclusively"
exit $failed
