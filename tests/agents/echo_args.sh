#!/bin/bash
# echo_args.sh [ARG...]
# Test agent: prints "argc=N", then each argument as "<ARG>" on its own line, exactly as
# received (no expansion), then exits 0.
echo "argc=$#"
for arg in "$@"; do
  printf '<%s>\n' "$arg"
done
