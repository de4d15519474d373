#!/bin/bash
# print_and_exit.sh CODE [MESSAGE...]
# Test agent: prints "stdout: MESSAGE" on stdout and "stderr: MESSAGE" on stderr, then exits
# with CODE (default 0). MESSAGE defaults to "print_and_exit CODE".
code="${1:-0}"
shift || true
msg="${*:-print_and_exit $code}"
echo "stdout: $msg"
echo "stderr: $msg" >&2
exit "$code"
