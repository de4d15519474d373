#!/usr/bin/env bash
# The release tx as cmake/function_order.cmake lays it out: the functions of cmake/tx.functions
# first in its text, side by side; that list still names tx's functions (a list gone stale
# places nothing, and an idle worker holds most of tx's text again: rerun scripts/function_order);
# relative relocations packed (DT_RELR).
#
#   bash tests/function_order_test.sh BUILD_DIR SOURCE_DIR
#
# Prints "N passed, M failed" last.

set -uo pipefail
export LC_ALL=C  # one collation for sort and join
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/shell_lib.sh"

if [[ $# -lt 2 ]]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
  exit 2
fi
TX=$1/tx
LIST=$2/cmake/tx.functions

# The ordered functions' output section, [lo, hi).
read -r addr size < <(readelf -SW "$TX" | awk '$2 == ".text.tx_ordered" {print $4, $6}')
lo=$((16#${addr:-0})) hi=$((16#${addr:-0} + 16#${size:-0}))
[[ $((hi - lo)) -gt 500000 ]]
check "tx's text begins with the listed functions (.text.tx_ordered, $((hi - lo)) bytes)" $? \
  "$(readelf -SW "$TX" | grep -E ' \.text')"

# Every listed function of tx's own code (namespace tx) lies in it; those of libraries built
# without a section a function (SQLite) cannot.
outside=()
own=0
while read -r address name; do
  own=$((own + 1))
  a=$((16#$address))
  [[ $a -ge $lo && $a -lt $hi ]] || outside+=("$name")
done < <(nm "$TX" | awk '$2 ~ /^[tTwW]$/ && $3 ~ /^_ZN[KVRO]*2tx/ {print $1, $3}' |
  sort -k2 | join -1 2 -2 1 -o 1.1,1.2 - <(grep -v '^#' "$LIST" | sort -u))
[[ $own -gt 300 && ${#outside[@]} == 0 ]]
check "the $own listed functions of namespace tx all lie there" $? "outside: ${outside[*]:0:3}"

listed=$(grep -vc '^#' "$LIST")
known=$(comm -12 <(grep -v '^#' "$LIST" | sort -u) <(nm "$TX" | awk '{print $NF}' | sort -u) | wc -l)
[[ $listed -gt 0 && $((known * 100)) -ge $((listed * 80)) ]]
check "cmake/tx.functions names tx's functions ($known of $listed; rerun scripts/function_order below 80 %)" $?

readelf -d "$TX" | grep -q '(RELR)'
check "tx's relative relocations are packed (DT_RELR)" $?

report
[[ $FAILED == 0 ]]
