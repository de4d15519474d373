#!/bin/bash
# exit_on_sigterm.sh [CODE]
# Test agent for a cooperative stop: prints "ready" once its SIGTERM trap is installed, then
# waits; on SIGTERM prints "got SIGTERM" and exits with CODE (default 143).
code="${1:-143}"
trap 'echo "got SIGTERM"; exit "$code"' TERM
echo "ready"
while :; do
  sleep 0.1
done
