#!/usr/bin/env bash
# The start-up cost of a bwrap-sandboxed agent (issue 25, docs/sandbox.md): ROUNDS rounds, each
# timing RUNS starts of /bin/true bare and RUNS inside the sandbox tx makes (the same bwrap
# options as worker/sandbox.cc, network off), interleaved so that both see the same machine.
# Prints the median per start of each with its spread over the rounds, and the difference.
# Usage: bench/sandbox_startup.sh [RUNS] [ROUNDS]
set -euo pipefail
runs="${1:-200}" rounds="${2:-5}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sandbox=(bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind "$work" "$work"
         --unshare-pid --unshare-ipc --unshare-uts --die-with-parent --unshare-net
         --chdir "$work" --)

# us_per_start COMMAND...: microseconds per start, over $runs starts.
us_per_start() {
  local start end
  start=$(date +%s%N)
  for ((i = 0; i < runs; i++)); do "$@" >/dev/null; done
  end=$(date +%s%N)
  echo $(((end - start) / runs / 1000))
}

bare=() boxed=()
for ((r = 0; r < rounds; r++)); do
  bare+=("$(us_per_start /bin/true)")
  boxed+=("$(us_per_start "${sandbox[@]}" /bin/true)")
done
summary() {  # median (min-max) of the arguments
  sort -n <<<"$(printf '%s\n' "$@")" | awk '{a[NR]=$1} END {printf "%d us (%d-%d)", a[int((NR+1)/2)], a[1], a[NR]}'
}
median() { sort -n <<<"$(printf '%s\n' "$@")" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "bare /bin/true:      $(summary "${bare[@]}")"
echo "bwrap /bin/true:     $(summary "${boxed[@]}")"
echo "sandbox adds:        $(( $(median "${boxed[@]}") - $(median "${bare[@]}") )) us per start (median of $rounds rounds of $runs)"
