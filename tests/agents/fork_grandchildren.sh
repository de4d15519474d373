#!/bin/bash
# fork_grandchildren.sh [COUNT] [wait|exit]
# Test agent: starts COUNT (default 2) background sleepers (`sleep 600`) that ignore SIGTERM and
# SIGHUP, so only SIGKILL to the process group stops them, and prints one line
# "grandchild PID" for each. Then prints "started COUNT" and either waits (default; ends on
# SIGTERM) or exits 0 at once, leaving the sleepers running in its process group.
count="${1:-2}"
then="${2:-wait}"
for ((i = 0; i < count; i++)); do
  (trap '' TERM HUP; exec sleep 600) &
  echo "grandchild $!"
done
echo "started $count"
if [[ "$then" == "exit" ]]; then
  exit 0
fi
while :; do
  sleep 0.1
done
