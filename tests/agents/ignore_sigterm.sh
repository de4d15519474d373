#!/bin/bash
# ignore_sigterm.sh
# Test agent: prints "ready" once its SIGTERM trap is installed (wait for that line before
# sending SIGTERM), then runs until SIGKILL. On each SIGTERM it prints "ignoring SIGTERM" and
# carries on; only SIGKILL stops it.
trap 'echo "ignoring SIGTERM"' TERM
echo "ready"
while :; do
  sleep 0.1
done
