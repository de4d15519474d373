#!/bin/bash
# list_fds.sh
# Test agent: prints one line "fd N -> TARGET" for each descriptor open in this shell, as
# /proc/self/fd shows them (bash keeps the script itself open on 255; the directory listing
# itself may show up with an empty target), then exits 0.
for fd in /proc/$$/fd/*; do
  echo "fd ${fd##*/} -> $(readlink "$fd")"
done
