#!/bin/bash
# print_forever.sh [INTERVAL]
# Test agent: prints "tick N" every INTERVAL seconds (default 0.05) until it is killed. The
# default SIGTERM disposition applies: SIGTERM ends it.
interval="${1:-0.05}"
i=0
while :; do
  echo "tick $i"
  i=$((i + 1))
  sleep "$interval"
done
