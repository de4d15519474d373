#!/bin/bash
# print_lines.sh COUNT [WIDTH]
# Test agent: prints COUNT numbered lines as fast as it can, then exits 0. Each line is
# "line NNNNNNNN " padded with 'x' to WIDTH characters (default 40) plus the newline, so the
# output is exactly COUNT * (WIDTH + 1) bytes when WIDTH >= 14.
count="${1:-100}"
width="${2:-40}"
pad=""
while ((${#pad} < width)); do pad+="x"; done
for ((i = 1; i <= count; i++)); do
  printf -v num '%08d' "$i"
  line="line $num $pad"
  echo "${line:0:width}"
done
